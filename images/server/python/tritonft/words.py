"""FT word-list tensors for `bad_words_list` / `stop_words_list`.

FT reads, per batch item, a [2, L] INT32 array: row 0 holds the token ids of all
words concatenated, row 1 the cumulative end offset of each word in row 0. Both
rows are padded to the batch's longest list, ids with 0 and offsets with -1;
FT stops reading offsets at the first -1. An item without words is therefore
ids [0], offsets [-1].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonft.tokenizer import TextTokenizer


def encode_words(tokenizer: TextTokenizer, words: Sequence[str]) -> tuple[list[int], list[int]]:
    """Token ids and cumulative end offsets for one item's words.

    Words are encoded exactly as given (no special tokens): a word meant to
    match mid-sentence usually needs its leading space, e.g. " foo".
    Empty strings are skipped: clients pad ragged word lists with them.
    """
    ids: list[int] = []
    offsets: list[int] = []
    for word in words:
        if word == "":
            continue
        tokens = tokenizer.encode(word, add_special_tokens=False)
        if not tokens:
            continue
        ids.extend(tokens)
        offsets.append(len(ids))
    return ids, offsets


def to_word_list_tensor(items: Sequence[tuple[list[int], list[int]]]) -> npt.NDArray[Any]:
    """Stack per-item (ids, offsets) pairs into a padded [batch, 2, L] int32 array."""
    width = max([1] + [max(len(ids), len(offsets)) for ids, offsets in items])
    out = np.zeros((len(items), 2, width), dtype=np.int32)
    out[:, 1, :] = -1
    for row, (ids, offsets) in enumerate(items):
        out[row, 0, : len(ids)] = ids
        out[row, 1, : len(offsets)] = offsets
    return out


def encode_word_lists(tokenizer: TextTokenizer, batch: Sequence[Sequence[str]]) -> npt.NDArray[Any]:
    """Encode each batch item's words once; returns [batch, 2, L] int32."""
    return to_word_list_tensor([encode_words(tokenizer, words) for words in batch])
