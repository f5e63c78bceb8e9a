"""The ensemble's wiring as data, for the streaming ensemble model.

A Triton ensemble cannot stream FT's decoupled responses through
postprocessing: postprocessing also reads preprocessing's outputs
(input_lengths, request_output_len), and Triton refuses an ensemble step whose
inputs come from different decoupled models (core ensemble_utils.cc, 23.05 and
later). So with FT decoupled the model named `ensemble` is a Python (BLS)
model that runs the same steps itself: the renderer passes the very step list
it would have written as ensemble_scheduling (parameter `steps`, JSON), and
this module resolves each step's inputs from the tensors seen so far.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tritonft.errors import ModelConfigError


@dataclass(frozen=True)
class Step:
    model: str
    # model input name -> pipeline tensor name
    input_map: dict[str, str]
    # model output name -> pipeline tensor name
    output_map: dict[str, str]


def parse_steps(raw: str) -> list[Step]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ModelConfigError(f"parameter 'steps' is not JSON: {err}") from None
    if not isinstance(data, list) or not data:
        raise ModelConfigError("parameter 'steps' must be a non-empty JSON list")
    steps = []
    for i, item in enumerate(data):
        try:
            steps.append(Step(str(item["model"]), dict(item["inputMap"]), dict(item["outputMap"])))
        except (KeyError, TypeError, ValueError):
            raise ModelConfigError(f"steps[{i}] needs model, inputMap and outputMap") from None
    return steps


def split_at_streamed(steps: list[Step], streamed: str) -> tuple[list[Step], Step, list[Step]]:
    """(steps before the decoupled model, the decoupled step, steps run on each of its responses)."""
    index = next((i for i, s in enumerate(steps) if s.model == streamed), None)
    if index is None:
        raise ModelConfigError(f"parameter 'streamed_step' names {streamed!r}, which is not a step")
    return steps[:index], steps[index], steps[index + 1 :]


def step_inputs(step: Step, tensors: Mapping[str, Any]) -> dict[str, Any]:
    """Model input name -> value for the inputs present (optional ones may be absent)."""
    return {model_name: tensors[source] for model_name, source in step.input_map.items() if source in tensors}


def step_outputs(step: Step, outputs: Mapping[str, Any]) -> dict[str, Any]:
    """Pipeline tensor name -> value for a step's outputs."""
    return {pipeline: outputs[model_name] for model_name, pipeline in step.output_map.items() if model_name in outputs}
