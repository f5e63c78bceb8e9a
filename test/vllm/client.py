"""A streaming gRPC call to the vLLM model, as the gateway makes it (ModelStreamInfer).

Returns every response's outputs, the last being the generation's final state.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import np_to_triton_dtype

OUTPUTS = (
    "text_output", "input_token_count", "output_token_count", "output_log_probs", "cum_log_probs", "output_tokens",
    "output_top_tokens", "output_top_log_probs",
)


@dataclass
class Result:
    responses: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @property
    def last(self) -> dict[str, Any]:
        assert self.responses, f"no response (error: {self.error})"
        return self.responses[-1]


def _input(name: str, value: np.ndarray) -> grpcclient.InferInput:
    datatype = "BYTES" if value.dtype == np.object_ else np_to_triton_dtype(value.dtype)
    tensor = grpcclient.InferInput(name, list(value.shape), datatype)
    tensor.set_data_from_numpy(value)
    return tensor


def generate(url: str, model: str, prompt: str, max_tokens: int, rows: int = 1, timeout: float = 300, **extra: Any) -> Result:
    """extra: optional inputs by name (a scalar per row, or `stop_words`/`bad_words` as a list)."""
    inputs = [
        _input("text_input", np.array([[prompt.encode()]] * rows, dtype=np.object_)),
        _input("max_tokens", np.array([[max_tokens]] * rows, dtype=np.uint32)),
    ]
    kinds = {"top_k": np.uint32, "return_tokens": np.uint32, "top_logprobs": np.uint32, "random_seed": np.uint64}
    for name, value in extra.items():
        if name in ("stop_words", "bad_words"):
            inputs.append(_input(name, np.array([[w.encode() for w in value]] * rows, dtype=np.object_)))
        else:
            inputs.append(_input(name, np.array([[value]] * rows, dtype=kinds.get(name, np.float32))))
    results: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client = grpcclient.InferenceServerClient(url)
    result = Result()
    try:
        client.start_stream(callback=lambda result, error: results.put((result, error)))
        client.async_stream_infer(model, inputs, enable_empty_final_response=True)
        while True:
            response, error = results.get(timeout=timeout)
            if error is not None:
                result.error = str(error)
                break
            payload = response.get_response(as_json=True)
            final = payload.get("parameters", {}).get("triton_final_response", {}).get("bool_param")
            if final and not payload.get("outputs"):
                break
            result.responses.append({name: response.as_numpy(name) for name in OUTPUTS if response.as_numpy(name) is not None})
    finally:
        client.stop_stream()
        client.close()
    return result
