"""Request checks and tensor shaping shared by preprocessing and postprocessing.

All functions raise RequestError with a message that names the input, the batch
item and the limit, because that message is what the client receives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonft.errors import RequestError


def rows(array: npt.NDArray[Any], name: str) -> list[list[Any]]:
    """Split a batched tensor ([batch, ...]) into per-item lists of elements."""
    if array.ndim == 0:
        raise RequestError(f"input '{name}' must have a batch dimension, got a scalar")
    batch = array.shape[0]
    flat = array.reshape(batch, -1)
    return [list(flat[i]) for i in range(batch)]


def decode_utf8(value: Any, where: str) -> str:
    """Decode one TYPE_STRING element; Triton hands them over as bytes."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, np.bytes_)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as err:
            raise RequestError(
                f"{where}: not valid UTF-8 ({err.reason} at byte {err.start})"
            ) from None
    raise RequestError(f"{where}: expected a string, got {type(value).__name__}")


def prompts(array: npt.NDArray[Any], name: str = "text_input") -> list[str]:
    """One decoded, non-empty prompt per batch item."""
    out: list[str] = []
    for index, items in enumerate(rows(array, name)):
        if len(items) != 1:
            raise RequestError(f"{name}[{index}]: expected exactly 1 string, got {len(items)}")
        text = decode_utf8(items[0], f"{name}[{index}]")
        if text == "":
            raise RequestError(f"{name}[{index}]: prompt is empty")
        out.append(text)
    return out


def word_lists(array: npt.NDArray[Any] | None, name: str, batch: int) -> list[list[str]]:
    """Decoded words per batch item for an optional STRING [-1] input."""
    if array is None:
        return [[] for _ in range(batch)]
    items = rows(array, name)
    if len(items) != batch:
        raise RequestError(
            f"input '{name}' has batch size {len(items)}, but text_input has {batch}"
        )
    return [
        [decode_utf8(word, f"{name}[{i}][{j}]") for j, word in enumerate(words)]
        for i, words in enumerate(items)
    ]


def max_tokens(array: npt.NDArray[Any] | None, batch: int, max_output_len: int) -> list[int]:
    """Requested output length per item, each in [1, max_output_len]."""
    if array is None:
        raise RequestError("missing required input 'max_tokens'")
    items = rows(array, "max_tokens")
    if len(items) != batch:
        raise RequestError(f"input 'max_tokens' has batch size {len(items)}, but text_input has {batch}")
    out: list[int] = []
    for index, values in enumerate(items):
        if len(values) != 1:
            raise RequestError(f"max_tokens[{index}]: expected exactly 1 value, got {len(values)}")
        value = int(values[0])
        if value < 1 or value > max_output_len:
            raise RequestError(
                f"max_tokens[{index}] is {value}: must be between 1 and max_output_len={max_output_len}"
            )
        out.append(value)
    return out


def check_prompt_bytes(index: int, prompt: str, max_prompt_bytes: int) -> None:
    """Refuse an oversized prompt before the tokenizer sees it: tokenizing a
    multi-megabyte prompt takes seconds and stalls every request behind it."""
    size = len(prompt.encode("utf-8"))
    if size > max_prompt_bytes:
        raise RequestError(
            f"text_input[{index}]: prompt is {size} bytes, more than max_prompt_bytes={max_prompt_bytes}"
        )


# Documented ranges of the sampling inputs (docs/architecture.md "Ensemble contract"); the
# gateway applies the same ones to its OpenAI fields.
TEMPERATURE_RANGE = (0.0, 2.0)  # exclusive lower bound: FT divides logits by it
REPETITION_PENALTY_RANGE = (0.0, 10.0)  # exclusive lower bound
PRESENCE_PENALTY_RANGE = (-2.0, 2.0)  # inclusive: OpenAI's range for the field it maps to


def _scalars(array: npt.NDArray[Any], name: str, batch: int) -> list[Any]:
    items = rows(array, name)
    if len(items) != batch:
        raise RequestError(f"input '{name}' has batch size {len(items)}, but text_input has {batch}")
    out = []
    for index, values in enumerate(items):
        if len(values) != 1:
            raise RequestError(f"{name}[{index}]: expected exactly 1 value, got {len(values)}")
        out.append(values[0])
    return out


def check_sampling(inputs: dict[str, npt.NDArray[Any] | None], batch: int, vocab_size: int) -> None:
    """Range-check the optional sampling inputs FT reads unchecked.

    FT takes NaN, inf, a zero temperature or a top_k beyond the vocabulary as
    they come (out-of-bounds reads, NaN logits); refuse them here, per request.
    """
    checks: dict[str, tuple[Callable[[Any], bool], str]] = {
        "top_k": (lambda v: 0 <= int(v) <= vocab_size, f"must be between 0 and the vocabulary size {vocab_size}"),
        "top_p": (lambda v: math.isfinite(float(v)) and 0.0 < float(v) <= 1.0, "must be finite, > 0 and <= 1"),
        "temperature": (
            lambda v: math.isfinite(float(v)) and TEMPERATURE_RANGE[0] < float(v) <= TEMPERATURE_RANGE[1],
            f"must be finite, > {TEMPERATURE_RANGE[0]:g} and <= {TEMPERATURE_RANGE[1]:g}",
        ),
        "repetition_penalty": (
            lambda v: math.isfinite(float(v))
            and REPETITION_PENALTY_RANGE[0] < float(v) <= REPETITION_PENALTY_RANGE[1],
            f"must be finite, > {REPETITION_PENALTY_RANGE[0]:g} and <= {REPETITION_PENALTY_RANGE[1]:g}",
        ),
        "presence_penalty": (
            lambda v: math.isfinite(float(v))
            and PRESENCE_PENALTY_RANGE[0] <= float(v) <= PRESENCE_PENALTY_RANGE[1],
            f"must be finite, >= {PRESENCE_PENALTY_RANGE[0]:g} and <= {PRESENCE_PENALTY_RANGE[1]:g}",
        ),
    }
    # FT's sampling layer stops (FT_CHECK) on a request carrying both penalties: refuse it here.
    if inputs.get("repetition_penalty") is not None and inputs.get("presence_penalty") is not None:
        raise RequestError("repetition_penalty and presence_penalty exclude each other (FT applies one): send one")
    for name, (ok, rule) in checks.items():
        array = inputs.get(name)
        if array is None:
            continue
        for index, value in enumerate(_scalars(array, name, batch)):
            if not ok(value):
                raise RequestError(f"{name}[{index}] is {value!r}: {rule}")
    seeds = inputs.get("random_seed")
    if seeds is not None:
        _scalars(seeds, "random_seed", batch)  # any UINT64 is a valid seed; the shape must still match


def check_prompt_length(index: int, ids: Sequence[int], max_input_len: int) -> None:
    if len(ids) == 0:
        raise RequestError(f"text_input[{index}]: prompt encodes to no tokens")
    if len(ids) > max_input_len:
        raise RequestError(
            f"text_input[{index}]: prompt is {len(ids)} tokens, more than max_input_len={max_input_len}"
        )


def pad_batch(ids: Sequence[Sequence[int]], pad_id: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Right-pad ragged id lists with pad_id; returns ([batch, max_len], [batch]) as int64."""
    width = max(len(seq) for seq in ids)
    out = np.full((len(ids), width), pad_id, dtype=np.int64)
    for row, seq in enumerate(ids):
        out[row, : len(seq)] = seq
    lengths = np.array([len(seq) for seq in ids], dtype=np.int64)
    return out, lengths


def generated_ids(
    output_ids: npt.NDArray[Any],
    sequence_length: int,
    input_length: int,
    end_id: int,
    pad_id: int,
    max_new_tokens: int | None = None,
) -> list[int]:
    """Tokens generated for one beam: [input_length, sequence_length), cut at end_id.

    FT returns the prompt and the generation in one padded row, and keeps
    writing end_id after a sequence finished; everything from the first end_id
    on is not generation. Trailing pad ids are dropped too. `max_new_tokens`
    (the request's own request_output_len) caps the result, because a
    dynamically batched FT run may generate up to the batch's largest request.
    """
    total = int(output_ids.shape[-1])
    if input_length < 0 or sequence_length < 0:
        raise RequestError("input_lengths and sequence_length must be non-negative")
    if sequence_length > total:
        raise RequestError(
            f"sequence_length {sequence_length} exceeds the {total} tokens in output_ids"
        )
    if input_length > sequence_length:
        raise RequestError(
            f"input_lengths {input_length} is larger than sequence_length {sequence_length}"
        )
    tokens = [int(t) for t in output_ids[input_length:sequence_length]]
    if max_new_tokens is not None:
        tokens = tokens[:max_new_tokens]
    if end_id in tokens:
        tokens = tokens[: tokens.index(end_id)]
    while tokens and tokens[-1] == pad_id:
        tokens.pop()
    return tokens
