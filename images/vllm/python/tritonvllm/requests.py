"""One Triton request of the ensemble contract as per-row vLLM generations.

The inputs are the ensemble's (docs/architecture.md "Ensemble contract"), so
the gateway calls an FT model and a vLLM model alike: every row of the batch
dimension is one generation (OpenAI `n` and `best_of` send copies of a prompt
with consecutive seeds). The checks are the FT models' own (tritonft), so a
bad request gets the same message, and the gateway the same error class, on
either engine. vLLM serves what FT cannot: `top_logprobs` alternatives per
token, and `presence_penalty` together with `repetition_penalty`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt

from tritonft.errors import RequestError
from tritonft.validation import _scalars, check_prompt_bytes, check_prompt_length, check_sampling, max_tokens, prompts, word_lists

Inputs = Mapping[str, "npt.NDArray[Any] | None"]


@dataclass(frozen=True)
class Generation:
    """One row: its prompt as token ids and the sampling settings vLLM takes."""

    prompt_ids: list[int]
    max_tokens: int
    sampling: dict[str, Any]
    stop: list[str] = field(default_factory=list)
    bad_words: list[str] = field(default_factory=list)
    return_tokens: bool = False
    top_logprobs: int = 0


def _row_values(inputs: Inputs, name: str, batch: int) -> list[Any] | None:
    array = inputs.get(name)
    return None if array is None else _scalars(array, name, batch)


def parse(
    inputs: Inputs,
    encode: Callable[[str], Sequence[int]],
    *,
    vocab_size: int,
    max_input_len: int,
    max_output_len: int,
    max_prompt_bytes: int,
    max_logprobs: int,
) -> list[Generation]:
    text = inputs.get("text_input")
    if text is None:
        raise RequestError("missing required input 'text_input'")
    texts = prompts(text)
    batch = len(texts)
    limits = max_tokens(inputs.get("max_tokens"), batch, max_output_len)
    # vLLM applies both penalties; FT's exclusion does not hold here, so check each alone.
    sampling_inputs = {k: v for k, v in inputs.items() if k != "presence_penalty"}
    check_sampling(sampling_inputs, batch, vocab_size)
    if inputs.get("presence_penalty") is not None:
        check_sampling({"presence_penalty": inputs.get("presence_penalty")}, batch, vocab_size)
    stops = word_lists(inputs.get("stop_words"), "stop_words", batch)
    bads = word_lists(inputs.get("bad_words"), "bad_words", batch)
    columns = {
        name: _row_values(inputs, name, batch)
        for name in ("top_k", "top_p", "temperature", "repetition_penalty", "presence_penalty", "random_seed",
                     "return_tokens", "top_logprobs")
    }
    out: list[Generation] = []
    for i, prompt in enumerate(texts):
        check_prompt_bytes(i, prompt, max_prompt_bytes)
        ids = list(encode(prompt))
        check_prompt_length(i, ids, max_input_len)
        value = {name: (None if col is None else col[i]) for name, col in columns.items()}
        top = 0 if value["top_logprobs"] is None else int(value["top_logprobs"])
        if top > max_logprobs:
            raise RequestError(f"top_logprobs[{i}] is {top}: must be between 0 and max_logprobs={max_logprobs}")
        sampling: dict[str, Any] = {
            # FT's and the contract's top_k 0 means "no top-k"; so does vLLM's 0.
            "top_k": 0 if value["top_k"] is None else int(value["top_k"]),
            "top_p": 1.0 if value["top_p"] is None else float(value["top_p"]),
            "temperature": 1.0 if value["temperature"] is None else float(value["temperature"]),
        }
        if value["repetition_penalty"] is not None:
            sampling["repetition_penalty"] = float(value["repetition_penalty"])
        if value["presence_penalty"] is not None:
            sampling["presence_penalty"] = float(value["presence_penalty"])
        if value["random_seed"] is not None:
            sampling["seed"] = int(value["random_seed"])
        out.append(
            Generation(
                prompt_ids=ids,
                max_tokens=limits[i],
                sampling=sampling,
                stop=stops[i],
                bad_words=bads[i],
                return_tokens=bool(value["return_tokens"]) if value["return_tokens"] is not None else False,
                top_logprobs=top,
            )
        )
    return out
