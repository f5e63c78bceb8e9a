"""Per-token texts and log probabilities of a generation (OpenAI `logprobs`).

FT computes the log probability of each token it samples (output_log_probs,
per generation step) and nothing about the alternatives. The gateway needs,
per returned token, its text and that number; the text is what the token adds
to the decoded output, so the pieces concatenate to the returned text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

REPLACEMENT = "\ufffd"
# Byte-level BPE decodes a token the same way whatever came more than a few
# tokens before it; the window bounds the cost at O(tokens) per response.
WINDOW = 8


def token_pieces(decode: Callable[[Sequence[int]], str], tokens: Sequence[int], window: int = WINDOW) -> list[str]:
    """The text each token adds. A token ending inside a multi-byte character
    adds "" and the token that completes the character carries it."""
    pieces: list[str] = []
    for i in range(len(tokens)):
        start = max(0, i - window)
        before = decode(tokens[start:i]).rstrip(REPLACEMENT)
        after = decode(tokens[start : i + 1])
        if i < len(tokens) - 1:
            after = after.rstrip(REPLACEMENT)
        pieces.append(after[len(before) :] if after.startswith(before) else after)
    return pieces


def row_log_probs(output_log_probs: npt.NDArray[Any] | None, item: int, count: int) -> list[float]:
    """Beam 0's log probabilities of the first `count` generated tokens of batch item `item`.

    output_log_probs is FT's [batch, beam, steps] (one value per generation
    step, the prompt excluded): step j is generated token j.
    """
    if output_log_probs is None:
        return [0.0] * count
    if output_log_probs.ndim != 3:
        raise ValueError(f"output_log_probs must be [batch, beam, steps], got shape {list(output_log_probs.shape)}")
    values = output_log_probs[item, 0, :count]
    if len(values) < count:
        raise ValueError(f"output_log_probs has {len(values)} steps for {count} generated tokens")
    return [float(v) for v in values]


def padded(rows: list[list[Any]], fill: Any, dtype: Any) -> npt.NDArray[Any]:
    """Ragged rows as one [batch, width] array (width at least 1: an empty dim is not worth the risk)."""
    width = max([1] + [len(r) for r in rows])
    out = np.full((len(rows), width), fill, dtype=dtype)
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            out[i, j] = v
    return out
