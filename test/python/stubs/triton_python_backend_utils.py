"""Test-only stand-in for Triton's `triton_python_backend_utils` (pb_utils).

Only for the unit tests in test/python: the real-server tests run the same
model.py files under a real tritonserver with the real module. It mirrors the
real API's shapes and semantics for the calls our models make:
- Tensor(name, numpy_array): refuses numpy unicode (`<U`) arrays like the real
  one (TYPE_STRING must be np.object_ of bytes), .name(), .as_numpy();
- InferenceRequest(inputs, request_id, correlation_id, requested_output_names);
- InferenceResponse(output_tensors: list, error: TritonError | None);
- TritonError(message) with .message();
- get_input_tensor_by_name returns None for an absent (optional) input;
- get_output_config_by_name reads the JSON form of config.pbtxt;
- triton_string_to_numpy maps "TYPE_*" names to numpy dtypes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

TRITON_STRING_TO_NUMPY: dict[str, Any] = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}


class TritonModelException(Exception):
    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self._msg = msg

    def message(self) -> str:
        return self._msg


class TritonError:
    # The real class's error-code constants (python_backend's TritonError enum).
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, msg: str, code: int | None = None) -> None:
        self._msg = msg
        self._code = code

    def __str__(self) -> str:
        return self._msg

    def message(self) -> str:
        return self._msg

    def code(self) -> int | None:
        return self._code


class Tensor:
    def __init__(self, name: str, numpy_array: np.ndarray) -> None:
        if not isinstance(numpy_array, np.ndarray):
            raise TritonModelException(f"Tensor '{name}': data must be a numpy array")
        if numpy_array.dtype.type == np.str_ or numpy_array.dtype == np.void:
            raise TritonModelException(
                "Tensor dtype used for numpy_array is not support by Python backend. Please use np.object_ instead."
            )
        self._name = name
        self._numpy_array = numpy_array

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        return self._numpy_array


class InferenceRequest:
    def __init__(
        self,
        inputs: list[Tensor],
        request_id: str = "",
        correlation_id: int = 0,
        requested_output_names: list[str] | None = None,
    ) -> None:
        self._inputs = inputs
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._requested_output_names = requested_output_names or []

    def inputs(self) -> list[Tensor]:
        return self._inputs

    def request_id(self) -> str:
        return self._request_id

    def correlation_id(self) -> int:
        return self._correlation_id

    def requested_output_names(self) -> list[str]:
        return self._requested_output_names


class InferenceResponse:
    def __init__(self, output_tensors: list[Tensor], error: TritonError | None = None) -> None:
        if type(output_tensors) is not list:
            raise TritonModelException('"output_tensors" must be a list.')
        for tensor in output_tensors:
            if not isinstance(tensor, Tensor):
                raise TritonModelException("output_tensors must hold pb_utils.Tensor objects")
        self._output_tensors = output_tensors
        self._err = error

    def output_tensors(self) -> list[Tensor]:
        return self._output_tensors

    def has_error(self) -> bool:
        return self._err is not None

    def error(self) -> TritonError | None:
        return self._err


def get_input_tensor_by_name(inference_request: InferenceRequest, name: str) -> Tensor | None:
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for entry in model_config.get("input", []):
        if entry["name"] == name:
            return dict(entry)
    return None


def get_output_config_by_name(model_config: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for entry in model_config.get("output", []):
        if entry["name"] == name:
            return dict(entry)
    return None


def triton_string_to_numpy(triton_type_string: str) -> Any:
    return TRITON_STRING_TO_NUMPY[triton_type_string]
