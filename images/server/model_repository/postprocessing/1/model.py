"""Triton Python model `postprocessing`: FT output ids in, generated text out.

Contract (per batch item, the model has max_batch_size > 0):
  inputs  output_ids UINT32 [-1,-1] (beam x tokens, prompt included, padded),
          sequence_length UINT32 [-1] (per beam, prompt included),
          input_lengths UINT32 [1], request_output_len UINT32 [-1] (caps the
          returned tokens; optional here so the model also works on its own),
          output_log_probs FP32 [-1,-1] (FT's, beam x steps; optional),
          return_tokens UINT32 [1] (optional; non-zero: fill output_tokens)
  outputs text_output STRING [1] (generated text of beam 0 only),
          input_token_count UINT32 [1], output_token_count UINT32 [1],
          output_log_probs FP32 [-1] (one per returned token, zero-padded),
          cum_log_probs FP32 [1] (their sum), output_tokens STRING [-1] (the
          text each returned token adds, or empty strings when not asked)
Parameters: tokenizer_path (absolute), end_id, pad_id.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

# The Python-backend stub may run an isolated interpreter that ignores
# PYTHONPATH, so add the image's install location of the shared package
# explicitly. A `tritonft/` copied beside this file also works: the model's
# version folder is on sys.path.
_SHARED = os.environ.get("TRITONFT_PYTHON", "/opt/triton-ft/python")
if os.path.isdir(_SHARED) and _SHARED not in sys.path:
    sys.path.append(_SHARED)

from tritonft.errors import RequestError, respond_each
from tritonft.logprobs import padded, row_log_probs, token_pieces
from tritonft.outputs import output_dtypes
from tritonft.params import PostprocessParams
from tritonft.tokenizer import load_tokenizer
from tritonft.validation import generated_ids

OUTPUTS = (
    "text_output",
    "input_token_count",
    "output_token_count",
    "output_log_probs",
    "cum_log_probs",
    "output_tokens",
)


def _required_input(request: Any, name: str) -> np.ndarray:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        raise RequestError(f"missing required input '{name}'")
    return tensor.as_numpy()


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        model_config = json.loads(args["model_config"])
        self.params = PostprocessParams.from_model_config(model_config)
        self.dtypes = output_dtypes(pb_utils, model_config, "postprocessing", OUTPUTS)
        self.tokenizer = load_tokenizer(self.params.tokenizer_path)

    def execute(self, requests: list[Any]) -> list[Any]:
        return respond_each(pb_utils, "postprocessing", requests, self._process)

    def _process(self, request: Any) -> list[Any]:
        output_ids = _required_input(request, "output_ids")
        sequence_length = _required_input(request, "sequence_length")
        input_lengths = _required_input(request, "input_lengths")
        if output_ids.ndim != 3:
            raise RequestError(f"output_ids must be [batch, beam, tokens], got shape {list(output_ids.shape)}")
        batch = output_ids.shape[0]
        seq = sequence_length.reshape(batch, -1)
        inp = input_lengths.reshape(batch, -1)
        limit_tensor = pb_utils.get_input_tensor_by_name(request, "request_output_len")
        limits = None if limit_tensor is None else limit_tensor.as_numpy().reshape(batch, -1)
        log_prob_tensor = pb_utils.get_input_tensor_by_name(request, "output_log_probs")
        log_probs = None if log_prob_tensor is None else log_prob_tensor.as_numpy()
        wants_tensor = pb_utils.get_input_tensor_by_name(request, "return_tokens")
        wants = [False] * batch if wants_tensor is None else [bool(v) for v in wants_tensor.as_numpy().reshape(-1)]
        if any(wants) and log_probs is None:
            raise RequestError("return_tokens needs FT's output_log_probs (is_return_log_probs) and none arrived")

        texts: list[bytes] = []
        in_counts: list[int] = []
        out_counts: list[int] = []
        row_probs: list[list[float]] = []
        row_pieces: list[list[bytes]] = []
        for i in range(batch):
            # Beam 0 only: the contract returns one text per prompt.
            tokens = generated_ids(
                output_ids[i, 0],
                int(seq[i, 0]),
                int(inp[i, 0]),
                self.params.end_id,
                self.params.pad_id,
                None if limits is None else int(limits[i, 0]),
            )
            texts.append(self.tokenizer.decode(tokens).encode("utf-8"))
            in_counts.append(int(inp[i, 0]))
            out_counts.append(len(tokens))
            try:
                row_probs.append(row_log_probs(log_probs, i, len(tokens)))
            except ValueError as err:
                raise RequestError(str(err)) from None
            pieces = token_pieces(self.tokenizer.decode, tokens) if wants[i] else []
            row_pieces.append([p.encode("utf-8") for p in pieces])

        text_array = np.empty((batch, 1), dtype=np.object_)
        for i, text in enumerate(texts):
            text_array[i, 0] = text
        return [
            pb_utils.Tensor("text_output", text_array.astype(self.dtypes["text_output"])),
            pb_utils.Tensor(
                "input_token_count", np.array(in_counts).reshape(batch, 1).astype(self.dtypes["input_token_count"])
            ),
            pb_utils.Tensor(
                "output_token_count", np.array(out_counts).reshape(batch, 1).astype(self.dtypes["output_token_count"])
            ),
            pb_utils.Tensor("output_log_probs", padded(row_probs, 0.0, self.dtypes["output_log_probs"])),
            pb_utils.Tensor(
                "cum_log_probs",
                np.array([sum(r) for r in row_probs]).reshape(batch, 1).astype(self.dtypes["cum_log_probs"]),
            ),
            pb_utils.Tensor("output_tokens", padded(row_pieces, b"", np.object_)),
        ]
