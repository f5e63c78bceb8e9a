"""Triton Python model `preprocessing`: text in, FT input tensors out.

Contract (per batch item, the model has max_batch_size > 0):
  inputs  text_input STRING [1], max_tokens UINT32 [1],
          bad_words STRING [-1] (optional), stop_words STRING [-1] (optional),
          top_k UINT32, top_p FP32, temperature FP32, repetition_penalty FP32,
          random_seed UINT64, presence_penalty FP32 (all [1], optional: only
          range-checked here, FT reads them straight from the ensemble)
  outputs input_ids UINT32 [-1], input_lengths UINT32 [1], request_output_len UINT32 [-1],
          bad_words_list INT32 [2,-1], stop_words_list INT32 [2,-1],
          start_id UINT32 [1], end_id UINT32 [1], is_return_log_probs BOOL [1] (always
          true: FT reads it from a batch's first request only, so it must not vary)
Parameters: tokenizer_path (absolute), start_id, end_id, pad_id, max_input_len, max_output_len,
max_prompt_bytes and vocab_size (optional).

The shared logic lives in the `tritonft` package (PYTHONPATH=/opt/triton-ft/python
in the server image) so it is unit-tested without Triton.
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
from tritonft.outputs import output_dtypes
from tritonft.params import PreprocessParams
from tritonft.tokenizer import load_tokenizer
from tritonft.validation import (
    check_prompt_bytes,
    check_prompt_length,
    check_sampling,
    max_tokens,
    pad_batch,
    prompts,
    word_lists,
)
from tritonft.words import encode_word_lists

SAMPLING_INPUTS = ("top_k", "top_p", "temperature", "repetition_penalty", "random_seed", "presence_penalty")
OUTPUTS = (
    "input_ids",
    "input_lengths",
    "request_output_len",
    "bad_words_list",
    "stop_words_list",
    "start_id",
    "end_id",
    "is_return_log_probs",
)


def _optional_input(request: Any, name: str) -> np.ndarray | None:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        model_config = json.loads(args["model_config"])
        self.params = PreprocessParams.from_model_config(model_config)
        self.dtypes = output_dtypes(pb_utils, model_config, "preprocessing", OUTPUTS)
        # Once per model instance, from the files baked into the image.
        self.tokenizer = load_tokenizer(self.params.tokenizer_path)
        self.vocab_size = self.params.vocab_size or self.tokenizer.vocab_size()

    def execute(self, requests: list[Any]) -> list[Any]:
        return respond_each(pb_utils, "preprocessing", requests, self._process)

    def _process(self, request: Any) -> list[Any]:
        p = self.params
        text = _optional_input(request, "text_input")
        if text is None:
            raise RequestError("missing required input 'text_input'")
        texts = prompts(text)
        batch = len(texts)
        output_lens = max_tokens(_optional_input(request, "max_tokens"), batch, p.max_output_len)
        bad = word_lists(_optional_input(request, "bad_words"), "bad_words", batch)
        stop = word_lists(_optional_input(request, "stop_words"), "stop_words", batch)
        check_sampling({name: _optional_input(request, name) for name in SAMPLING_INPUTS}, batch, self.vocab_size)
        for index, prompt in enumerate(texts):
            check_prompt_bytes(index, prompt, p.max_prompt_bytes)

        encoded = []
        for index, prompt in enumerate(texts):
            ids = self.tokenizer.encode(prompt)
            check_prompt_length(index, ids, p.max_input_len)
            encoded.append(ids)
        input_ids, lengths = pad_batch(encoded, p.pad_id)

        def column(values: list[int] | np.ndarray, name: str) -> Any:
            return pb_utils.Tensor(name, np.asarray(values).reshape(batch, 1).astype(self.dtypes[name]))

        return [
            pb_utils.Tensor("input_ids", input_ids.astype(self.dtypes["input_ids"])),
            column(lengths, "input_lengths"),
            column(output_lens, "request_output_len"),
            pb_utils.Tensor(
                "bad_words_list", encode_word_lists(self.tokenizer, bad).astype(self.dtypes["bad_words_list"])
            ),
            pb_utils.Tensor(
                "stop_words_list", encode_word_lists(self.tokenizer, stop).astype(self.dtypes["stop_words_list"])
            ),
            column([p.start_id] * batch, "start_id"),
            column([p.end_id] * batch, "end_id"),
            column([True] * batch, "is_return_log_probs"),
        ]
