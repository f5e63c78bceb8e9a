"""The streaming ensemble's step list: parsed from the renderer's JSON, split
around the decoupled model, and each step's inputs resolved from the tensors
seen so far (optional ones may be absent)."""

from __future__ import annotations

import json

import pytest

from tritonft.errors import ModelConfigError
from tritonft.steps import parse_steps, split_at_streamed, step_inputs, step_outputs

STEPS = json.dumps(
    [
        {"model": "preprocessing", "inputMap": {"text_input": "text_input", "top_k": "top_k"}, "outputMap": {"input_ids": "_ids"}},
        {"model": "fastertransformer", "inputMap": {"input_ids": "_ids", "runtime_top_k": "top_k"}, "outputMap": {"output_ids": "_out"}},
        {"model": "postprocessing", "inputMap": {"output_ids": "_out"}, "outputMap": {"text_output": "text_output"}},
    ]
)


def test_split_around_the_decoupled_model() -> None:
    before, streamed, after = split_at_streamed(parse_steps(STEPS), "fastertransformer")
    assert [s.model for s in before] == ["preprocessing"]
    assert streamed.model == "fastertransformer"
    assert [s.model for s in after] == ["postprocessing"]


def test_inputs_follow_the_maps_and_skip_absent_optionals() -> None:
    _, streamed, _ = split_at_streamed(parse_steps(STEPS), "fastertransformer")
    assert step_inputs(streamed, {"_ids": 1, "top_k": 5}) == {"input_ids": 1, "runtime_top_k": 5}
    assert step_inputs(streamed, {"_ids": 1}) == {"input_ids": 1}
    assert step_outputs(streamed, {"output_ids": 9, "other": 0}) == {"_out": 9}


@pytest.mark.parametrize("raw", ["", "[]", "{}", '[{"model": "x"}]', "not json"])
def test_bad_step_parameters_fail_the_load(raw: str) -> None:
    with pytest.raises(ModelConfigError):
        parse_steps(raw)


def test_unknown_streamed_step_fails_the_load() -> None:
    with pytest.raises(ModelConfigError, match="streamed_step"):
        split_at_streamed(parse_steps(STEPS), "nope")
