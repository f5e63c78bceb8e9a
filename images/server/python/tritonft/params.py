"""Model parameters read from the Triton model config (config.pbtxt as JSON).

Every id and limit comes from here: the renderer writes them from the model's
own config, so nothing in the Python models is a per-family constant.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tritonft.errors import ModelConfigError


def _parameter(model_config: Mapping[str, Any], name: str) -> str:
    params = model_config.get("parameters") or {}
    entry = params.get(name)
    if entry is None:
        raise ModelConfigError(
            f"model '{model_config.get('name', '?')}': missing parameter '{name}' in config.pbtxt"
        )
    # Triton's JSON form is {"string_value": "..."}; accept a bare string too so
    # a hand-written test config reads the same.
    value = entry.get("string_value") if isinstance(entry, Mapping) else entry
    if not isinstance(value, str) or value.strip() == "":
        raise ModelConfigError(
            f"model '{model_config.get('name', '?')}': parameter '{name}' must be a non-empty string_value"
        )
    return value.strip()


def _int_parameter(model_config: Mapping[str, Any], name: str, minimum: int) -> int:
    raw = _parameter(model_config, name)
    try:
        value = int(raw, 10)
    except ValueError:
        raise ModelConfigError(
            f"model '{model_config.get('name', '?')}': parameter '{name}' must be an integer, got {raw!r}"
        ) from None
    if value < minimum:
        raise ModelConfigError(
            f"model '{model_config.get('name', '?')}': parameter '{name}' must be >= {minimum}, got {value}"
        )
    return value


def _optional_int_parameter(model_config: Mapping[str, Any], name: str, minimum: int) -> int | None:
    params = model_config.get("parameters") or {}
    return None if params.get(name) is None else _int_parameter(model_config, name, minimum)


# Same rule as the renderer's maxPromptBytes (infra/render/modelRepository.ts),
# for a config rendered before the parameter existed.
PROMPT_BYTES_PER_TOKEN = 32


def _tokenizer_path(model_config: Mapping[str, Any]) -> str:
    path = _parameter(model_config, "tokenizer_path")
    # A relative path would resolve against tritonserver's working directory,
    # which is one of the upstream defects this project fixes.
    if not os.path.isabs(path):
        raise ModelConfigError(
            f"model '{model_config.get('name', '?')}': tokenizer_path must be absolute, got {path!r}"
        )
    return path


@dataclass(frozen=True)
class PreprocessParams:
    tokenizer_path: str
    start_id: int
    end_id: int
    pad_id: int
    max_input_len: int
    max_output_len: int
    # Prompts longer than this many UTF-8 bytes are refused before tokenizing.
    max_prompt_bytes: int = 0
    # Upper bound of top_k; None: the tokenizer's vocabulary size.
    vocab_size: int | None = None

    @classmethod
    def from_model_config(cls, model_config: Mapping[str, Any]) -> PreprocessParams:
        max_input_len = _int_parameter(model_config, "max_input_len", 1)
        max_prompt_bytes = _optional_int_parameter(model_config, "max_prompt_bytes", 1)
        return cls(
            tokenizer_path=_tokenizer_path(model_config),
            start_id=_int_parameter(model_config, "start_id", 0),
            end_id=_int_parameter(model_config, "end_id", 0),
            pad_id=_int_parameter(model_config, "pad_id", 0),
            max_input_len=max_input_len,
            max_output_len=_int_parameter(model_config, "max_output_len", 1),
            max_prompt_bytes=max_prompt_bytes or max_input_len * PROMPT_BYTES_PER_TOKEN,
            vocab_size=_optional_int_parameter(model_config, "vocab_size", 1),
        )


@dataclass(frozen=True)
class PostprocessParams:
    tokenizer_path: str
    end_id: int
    pad_id: int

    @classmethod
    def from_model_config(cls, model_config: Mapping[str, Any]) -> PostprocessParams:
        return cls(
            tokenizer_path=_tokenizer_path(model_config),
            end_id=_int_parameter(model_config, "end_id", 0),
            pad_id=_int_parameter(model_config, "pad_id", 0),
        )
