"""Triton Python model `ensemble` in streaming mode (rendered only when FT is decoupled).

Same contract as the ensemble platform model (docs/architecture.md "Ensemble contract"),
but decoupled: for every response FT streams (one per generated token, the
whole output so far), postprocessing decodes the generation so far and this
model sends it on, so a client over gRPC ModelStreamInfer (the gateway) gets
text as it is generated. Identical consecutive outputs are sent once; the
request ends with an empty FINAL response.

It runs the steps the renderer would have written as ensemble_scheduling
(parameter `steps`, JSON, and `streamed_step`, the decoupled model) with BLS:
exec() for preprocessing and postprocessing, exec(decoupled=True) for FT
(Python backend 23.03 and later). Each instance handles one request at a time
and the renderer starts max_batch_size instances, so FT still sees enough
concurrent requests to batch them.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

_SHARED = os.environ.get("TRITONFT_PYTHON", "/opt/triton-ft/python")
if os.path.isdir(_SHARED) and _SHARED not in sys.path:
    sys.path.append(_SHARED)

from tritonft.errors import ModelConfigError, request_error
from tritonft.steps import parse_steps, split_at_streamed, step_inputs, step_outputs


class StepFailed(Exception):
    def __init__(self, error: Any) -> None:
        super().__init__(error.message())
        self.error = error


def _run(step: Any, tensors: dict[str, np.ndarray], decoupled: bool = False) -> Any:
    request = pb_utils.InferenceRequest(
        model_name=step.model,
        requested_output_names=list(step.output_map.keys()),
        inputs=[pb_utils.Tensor(name, value) for name, value in step_inputs(step, tensors).items()],
    )
    return request.exec(decoupled=True) if decoupled else request.exec()


def _outputs(step: Any, response: Any) -> dict[str, np.ndarray]:
    if response.has_error():
        raise StepFailed(response.error())
    found = {}
    for name in step.output_map:
        tensor = pb_utils.get_output_tensor_by_name(response, name)
        if tensor is not None:
            found[name] = tensor.as_numpy()
    return step_outputs(step, found)


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise ModelConfigError("the streaming ensemble must be decoupled (model_transaction_policy)")
        params = config.get("parameters") or {}
        steps = parse_steps(str((params.get("steps") or {}).get("string_value", "")))
        streamed = str((params.get("streamed_step") or {}).get("string_value", ""))
        self.before, self.streamed, self.after = split_at_streamed(steps, streamed)
        self.inputs = [spec["name"] for spec in config.get("input", [])]
        self.outputs = [spec["name"] for spec in config.get("output", [])]

    def execute(self, requests: list[Any]) -> None:
        for request in requests:
            sender = request.get_response_sender()
            try:
                self._serve(request, sender)
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            except StepFailed as failed:
                code = failed.error.code() if hasattr(failed.error, "code") else None
                invalid = getattr(pb_utils.TritonError, "INVALID_ARG", object())
                error = request_error(pb_utils, str(failed)) if code == invalid else pb_utils.TritonError(str(failed))
                sender.send(
                    pb_utils.InferenceResponse(output_tensors=[], error=error),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
            except Exception as err:  # a bug fails this request only
                print(f"ensemble (streaming): unexpected {type(err).__name__}: {err}", file=sys.stderr)
                sender.send(
                    pb_utils.InferenceResponse(
                        output_tensors=[], error=pb_utils.TritonError(f"ensemble failed: {type(err).__name__}: {err}")
                    ),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
        return None

    def _serve(self, request: Any, sender: Any) -> None:
        tensors: dict[str, np.ndarray] = {}
        for name in self.inputs:
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            if tensor is not None:
                tensors[name] = tensor.as_numpy()
        for step in self.before:
            tensors.update(_outputs(step, _run(step, tensors)))
        previous: list[bytes] | None = None
        for response in _run(self.streamed, tensors, decoupled=True):
            # The last message of a decoupled model may be an empty FINAL.
            if not response.has_error() and len(response.output_tensors()) == 0:
                continue
            current = dict(tensors)
            current.update(_outputs(self.streamed, response))
            for step in self.after:
                current.update(_outputs(step, _run(step, current)))
            result = [current[name] for name in self.outputs]
            fingerprint = [np.ascontiguousarray(a).tobytes() if a.dtype != object else repr(a.tolist()).encode() for a in result]
            if fingerprint == previous:
                continue
            previous = fingerprint
            sender.send(
                pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(n, a) for n, a in zip(self.outputs, result, strict=True)])
            )
