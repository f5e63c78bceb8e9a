"""Loads the model's own tokenizer from a local directory, never from the Hub.

Two loaders, tried in order:
1. `transformers.AutoTokenizer.from_pretrained(dir, local_files_only=True)`:
   understands every layout a model repo ships (tokenizer.json, or
   vocab.json + merges.txt with tokenizer_config.json, ...).
2. `tokenizers.Tokenizer.from_file(dir/tokenizer.json)`: for a directory that
   holds only tokenizer.json (AutoTokenizer needs a config to pick a class), or
   an image without transformers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _force_offline() -> None:
    """Offline before the lazy Hugging Face imports below: huggingface_hub reads
    these once, at its import, and a model server must never reach the Hub
    (local_files_only=True is the second guard)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    # Tokenizers' Rust thread pool misbehaves after the Python backend forks its stub.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class TokenizerLoadError(RuntimeError):
    """No loader could read a tokenizer from the given directory."""


class TextTokenizer:
    """Uniform encode/decode over a transformers or a raw tokenizers tokenizer."""

    def __init__(self, backend: str, impl: Any, source: str) -> None:
        self.backend = backend
        self.source = source
        self._impl = impl

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        if self.backend == "transformers":
            ids = self._impl.encode(text, add_special_tokens=add_special_tokens)
        else:
            ids = self._impl.encode(text, add_special_tokens=add_special_tokens).ids
        return [int(i) for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        token_ids = [int(i) for i in ids]
        if self.backend == "transformers":
            # No clean-up: it rewrites spaces around punctuation, which corrupts
            # generated code and breaks the encode/decode round trip.
            return str(
                self._impl.decode(
                    token_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
                )
            )
        return str(self._impl.decode(token_ids, skip_special_tokens=True))

    def vocab_size(self) -> int:
        """Token ids the tokenizer can produce, added tokens included."""
        if self.backend == "transformers":
            return len(self._impl)
        return int(self._impl.get_vocab_size(with_added_tokens=True))

    def __repr__(self) -> str:
        return f"TextTokenizer(backend={self.backend!r}, source={self.source!r})"


def _load_transformers(path: Path) -> TextTokenizer:
    from transformers import AutoTokenizer  # imported late: optional dependency

    impl = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    return TextTokenizer("transformers", impl, str(path))


def _load_tokenizers(path: Path) -> TextTokenizer:
    from tokenizers import Tokenizer

    file = path / "tokenizer.json"
    if not file.is_file():
        raise FileNotFoundError(f"{file} does not exist")
    return TextTokenizer("tokenizers", Tokenizer.from_file(str(file)), str(file))


def load_tokenizer(path: str) -> TextTokenizer:
    """Load the tokenizer in `path` (an absolute local directory) or raise TokenizerLoadError."""
    _force_offline()
    directory = Path(path)
    if not directory.is_absolute():
        raise TokenizerLoadError(f"tokenizer path must be absolute, got {path!r}")
    if not directory.is_dir():
        raise TokenizerLoadError(f"tokenizer directory {path!r} does not exist")

    failures: list[str] = []
    has_config = (directory / "tokenizer_config.json").is_file() or (directory / "config.json").is_file()
    if has_config:
        try:
            return _load_transformers(directory)
        except Exception as err:  # any loader failure falls through to the next loader
            failures.append(f"transformers.AutoTokenizer: {type(err).__name__}: {err}")
    else:
        failures.append("transformers.AutoTokenizer: skipped (no tokenizer_config.json or config.json)")
    try:
        return _load_tokenizers(directory)
    except Exception as err:
        failures.append(f"tokenizers.Tokenizer: {type(err).__name__}: {err}")
    raise TokenizerLoadError(
        f"cannot load a tokenizer from {path!r}; tried:\n  " + "\n  ".join(failures)
    )
