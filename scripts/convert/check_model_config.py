#!/usr/bin/env python3
"""Check a fetched Hugging Face config.json against the preset's expected architecture.

This is how presets are checked against the model's own config at build time:
a preset whose numbers drift from the checkpoint fails the build here instead of
producing a config.ini, gemm tuning or tensor-parallel split for the wrong shape.

  check_model_config.py --config HF_DIR/config.json --expected arch.json [--family gptj]

arch.json holds the preset's architecture (the TS `ModelArch`), flat or under "arch":
  {"family": "gptj", "layers": 28, "hidden": 4096, "heads": 16, "ffn": 16384, "vocab": 50400,
   "rotaryDims": 64, "maxPositions": 2048, "startId": 50256, "endId": 50256}

config.json field names per family (first name found wins):
  gptneox: num_hidden_layers, hidden_size, num_attention_heads, intermediate_size, vocab_size,
           rotary_pct x (hidden_size / num_attention_heads), max_position_embeddings, bos/eos_token_id
  gptj, codegen: n_layer, n_embd, n_head, n_inner (null -> 4 x n_embd), vocab_size, rotary_dim,
           n_positions, bos/eos_token_id
  gpt:     n_layer, n_embd, n_head, n_inner (null -> 4 x n_embd), vocab_size, no rotary (0),
           n_positions, bos/eos_token_id
Exit codes: 0 all match, 1 mismatches (each one listed), 2 bad arguments or unreadable files.
No third-party imports.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

FAMILIES = ("gptneox", "gptj", "gpt", "codegen")
ARCH_KEYS = ("layers", "hidden", "heads", "ffn", "vocab", "rotaryDims", "maxPositions", "startId", "endId")

# The model_type each family's config.json declares.
MODEL_TYPES = {"gptneox": ("gpt_neox",), "gptj": ("gptj",), "gpt": ("gpt2",), "codegen": ("codegen",)}


class Missing(Exception):
    """config.json lacks a field the check needs."""


def _field(config: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in config:
            return config[name]
    raise Missing(" / ".join(names))


def _int(config: Mapping[str, Any], *names: str) -> int:
    value = _field(config, *names)
    if not isinstance(value, int) or isinstance(value, bool):
        raise Missing(f"{' / '.join(names)} (not an integer: {value!r})")
    return value


def _ffn_or_4x(config: Mapping[str, Any], hidden: int) -> int:
    value = config.get("n_inner")
    return 4 * hidden if value is None else int(value)


def _neox_rotary(config: Mapping[str, Any]) -> int:
    hidden, heads = _int(config, "hidden_size"), _int(config, "num_attention_heads")
    pct = _field(config, "rotary_pct", "partial_rotary_factor")
    # transformers' GPT-NeoX: rotary_ndims = int(head_size * rotary_pct)
    return int((hidden // heads) * float(pct))


Extractor = Callable[[Mapping[str, Any]], int]

GPTJ_LIKE: dict[str, Extractor] = {
    "layers": lambda c: _int(c, "n_layer", "num_hidden_layers"),
    "hidden": lambda c: _int(c, "n_embd", "hidden_size"),
    "heads": lambda c: _int(c, "n_head", "num_attention_heads"),
    "ffn": lambda c: _ffn_or_4x(c, _int(c, "n_embd", "hidden_size")),
    "vocab": lambda c: _int(c, "vocab_size"),
    "rotaryDims": lambda c: _int(c, "rotary_dim"),
    "maxPositions": lambda c: _int(c, "n_positions", "max_position_embeddings"),
    "startId": lambda c: _int(c, "bos_token_id"),
    "endId": lambda c: _int(c, "eos_token_id"),
}

EXTRACTORS: dict[str, dict[str, Extractor]] = {
    "gptneox": {
        "layers": lambda c: _int(c, "num_hidden_layers"),
        "hidden": lambda c: _int(c, "hidden_size"),
        "heads": lambda c: _int(c, "num_attention_heads"),
        "ffn": lambda c: _int(c, "intermediate_size"),
        "vocab": lambda c: _int(c, "vocab_size"),
        "rotaryDims": _neox_rotary,
        "maxPositions": lambda c: _int(c, "max_position_embeddings"),
        "startId": lambda c: _int(c, "bos_token_id"),
        "endId": lambda c: _int(c, "eos_token_id"),
    },
    "gptj": GPTJ_LIKE,
    "codegen": GPTJ_LIKE,
    "gpt": {**GPTJ_LIKE, "rotaryDims": lambda c: 0},
}


def normalise_expected(raw: Any, family_flag: str | None) -> tuple[str, dict[str, int]]:
    if not isinstance(raw, dict):
        raise ValueError("expected architecture must be a JSON object")
    arch = raw.get("arch", raw)
    if not isinstance(arch, dict):
        raise ValueError("'arch' must be an object")
    family = family_flag or raw.get("family") or arch.get("family")
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)} (from --family or the JSON), got {family!r}")
    values: dict[str, int] = {}
    for key in ARCH_KEYS:
        if key not in arch:
            raise ValueError(f"expected architecture has no '{key}'")
        value = arch[key]
        if key == "ffn" and value is None:
            continue  # resolved against hidden below
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"expected '{key}' must be a non-negative integer, got {value!r}")
        values[key] = value
    if "ffn" not in values:
        values["ffn"] = 4 * values["hidden"]
    return family, values


def compare(family: str, expected: Mapping[str, int], config: Mapping[str, Any]) -> list[str]:
    """Every mismatch between the preset and config.json, as readable lines."""
    problems: list[str] = []
    model_type = config.get("model_type")
    if model_type is not None and model_type not in MODEL_TYPES[family]:
        problems.append(f"model_type: config.json says {model_type!r}, family {family} expects {' or '.join(MODEL_TYPES[family])}")
    for key in ARCH_KEYS:
        try:
            actual = EXTRACTORS[family][key](config)
        except Missing as err:
            problems.append(f"{key}: config.json has no usable {err}")
            continue
        if actual != expected[key]:
            problems.append(f"{key}: preset has {expected[key]}, config.json has {actual}")
    if expected["heads"] and expected["hidden"] % expected["heads"]:
        problems.append(f"hidden {expected['hidden']} is not divisible by heads {expected['heads']}")
    return problems


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read {what} {path}: {err}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compare a Hugging Face config.json with a preset's expected architecture; list every mismatch.",
    )
    parser.add_argument("--config", required=True, type=Path, help="the model's config.json (or its directory)")
    parser.add_argument("--expected", required=True, type=Path, help="JSON with family, layers, hidden, heads, ffn, vocab, rotaryDims, maxPositions, startId, endId")
    parser.add_argument("--family", choices=FAMILIES, help="family (overrides the JSON's 'family')")
    args = parser.parse_args(argv)
    config_path = args.config / "config.json" if args.config.is_dir() else args.config
    try:
        config = _read_json(config_path, "model config")
        if not isinstance(config, dict):
            raise ValueError(f"{config_path} is not a JSON object")
        family, expected = normalise_expected(_read_json(args.expected, "expected architecture"), args.family)
    except ValueError as err:
        print(f"check_model_config: {err}", file=sys.stderr)
        return 2
    problems = compare(family, expected, config)
    if problems:
        print(f"check_model_config: {config_path} does not match the {family} preset ({len(problems)} mismatch(es)):", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    print(f"check_model_config: {config_path} matches the {family} preset: " + ", ".join(f"{k}={expected[k]}" for k in ARCH_KEYS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
