"""The ensemble's outputs from the rows' progress so far.

Every streamed response carries every row's whole generation so far (the
contract's cumulative `text_output`, as FT's streaming ensemble sends it), so
the gateway reads an FT and a vLLM model the same way. Ragged per-token
outputs are padded to the longest row (width at least 1, as tritonft pads).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonft.logprobs import padded, token_pieces

Decode = Callable[[Sequence[int]], str]


@dataclass
class RowState:
    """One row's generation so far, as vLLM reported it."""

    prompt_tokens: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    # The log probability of each generated token.
    log_probs: list[float] = field(default_factory=list)
    # Per generated token, the top alternatives by rank: (text, log probability).
    alternatives: list[list[tuple[str, float]]] = field(default_factory=list)
    finished: bool = False


def _column(values: list[Any], dtype: Any) -> npt.NDArray[Any]:
    return np.array(values, dtype=dtype).reshape(len(values), 1)


def top_alternatives(rows: Sequence[RowState], k: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """[batch, tokens, k] texts and log probabilities of each token's top alternatives.

    Padding (a shorter row, or k = 0 where both dims are kept at 1) is an
    empty text with log probability -inf: no token, probability 0.
    """
    width = max(1, k)
    length = max([1] + [len(r.alternatives) for r in rows])
    texts = np.full((len(rows), length, width), b"", dtype=np.object_)
    probs = np.full((len(rows), length, width), -math.inf, dtype=np.float32)
    for i, row in enumerate(rows):
        for j, alternatives in enumerate(row.alternatives):
            for rank, (text, logprob) in enumerate(alternatives[:k]):
                texts[i, j, rank] = text.encode("utf-8")
                probs[i, j, rank] = logprob
    return texts, probs


def outputs(rows: Sequence[RowState], decode: Decode, return_tokens: Sequence[bool], k: int) -> dict[str, npt.NDArray[Any]]:
    """Every output tensor of the contract for the rows as they stand (numpy, by name)."""
    text_output = np.empty((len(rows), 1), dtype=np.object_)
    for i, row in enumerate(rows):
        text_output[i, 0] = row.text.encode("utf-8")
    pieces = [
        [p.encode("utf-8") for p in token_pieces(decode, row.token_ids)] if wants else []
        for row, wants in zip(rows, return_tokens, strict=True)
    ]
    top_texts, top_probs = top_alternatives(rows, k)
    return {
        "text_output": text_output,
        "input_token_count": _column([r.prompt_tokens for r in rows], np.uint32),
        "output_token_count": _column([len(r.token_ids) for r in rows], np.uint32),
        "output_log_probs": padded([r.log_probs for r in rows], 0.0, np.float32),
        "cum_log_probs": _column([float(sum(r.log_probs)) for r in rows], np.float32),
        "output_tokens": padded(pieces, b"", np.object_),
        "output_top_tokens": top_texts,
        "output_top_log_probs": top_probs,
    }
