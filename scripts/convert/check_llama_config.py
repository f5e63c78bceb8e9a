#!/usr/bin/env python3
"""check_model_config.py for the families only vLLM serves (llama).

  check_llama_config.py --config HF_DIR/config.json --expected arch.json

The same comparison as check_model_config.py (which it imports), with Llama's
config.json field names added and the grouped-query key/value heads checked:

  llama: num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads
         (unset -> num_attention_heads), intermediate_size, vocab_size, rotary = the
         head size (Llama rotates the whole head), max_position_embeddings,
         bos/eos_token_id

A separate file on purpose: check_model_config.py is an input of every FT
model's fetch step, so changing it would re-run every live stack's fetch,
convert and bake. vLLM's bake (scripts/remote/bake-vllm.sh) runs this one on
the host (stdlib only) before it builds.
Exit codes: 0 match, 1 mismatch, 2 bad arguments/input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import check_model_config as base

FAMILY = "llama"
KV_HEADS = "kvHeads"

LLAMA: dict[str, base.Extractor] = {
    "layers": lambda c: base._int(c, "num_hidden_layers"),
    "hidden": lambda c: base._int(c, "hidden_size"),
    "heads": lambda c: base._int(c, "num_attention_heads"),
    KV_HEADS: lambda c: base._int(c, "num_key_value_heads", "num_attention_heads"),
    "ffn": lambda c: base._int(c, "intermediate_size"),
    "vocab": lambda c: base._int(c, "vocab_size"),
    "rotaryDims": lambda c: base._int(c, "hidden_size") // base._int(c, "num_attention_heads"),
    "maxPositions": lambda c: base._int(c, "max_position_embeddings"),
    "startId": lambda c: base._int(c, "bos_token_id"),
    "endId": lambda c: base._int(c, "eos_token_id"),
}


def compare(expected: Mapping[str, int], config: Mapping[str, Any]) -> list[str]:
    """Every mismatch between the preset and a Llama config.json, as readable lines."""
    problems: list[str] = []
    model_type = config.get("model_type")
    if model_type is not None and model_type != FAMILY:
        problems.append(f"model_type: config.json says {model_type!r}, family {FAMILY} expects {FAMILY!r}")
    for key in (*base.ARCH_KEYS, KV_HEADS):
        try:
            actual = LLAMA[key](config)
        except base.Missing as err:
            problems.append(f"{key}: config.json has no usable {err}")
            continue
        if actual != expected[key]:
            problems.append(f"{key}: preset has {expected[key]}, config.json has {actual}")
    return problems


def expected_of(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        raise ValueError("expected architecture must be a JSON object")
    arch = raw.get("arch", raw)
    if not isinstance(arch, dict) or arch.get("family", raw.get("family")) != FAMILY:
        raise ValueError(f"expected architecture must be of family {FAMILY}")
    values: dict[str, int] = {}
    for key in base.ARCH_KEYS:
        value = arch.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"expected '{key}' must be a non-negative integer, got {value!r}")
        values[key] = value
    kv = arch.get(KV_HEADS, values["heads"])
    if not isinstance(kv, int) or isinstance(kv, bool) or kv < 1:
        raise ValueError(f"expected '{KV_HEADS}' must be a positive integer, got {kv!r}")
    values[KV_HEADS] = kv
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compare a Llama config.json with a preset's expected architecture.")
    parser.add_argument("--config", required=True, type=Path, help="the model's config.json (or its directory)")
    parser.add_argument("--expected", required=True, type=Path, help="JSON with family llama and the arch numbers")
    args = parser.parse_args(argv)
    config_path = args.config / "config.json" if args.config.is_dir() else args.config
    try:
        config = base._read_json(config_path, "model config")
        if not isinstance(config, dict):
            raise ValueError(f"{config_path} is not a JSON object")
        expected = expected_of(base._read_json(args.expected, "expected architecture"))
    except ValueError as err:
        print(f"check_llama_config: {err}", file=sys.stderr)
        return 2
    problems = compare(expected, config)
    if problems:
        print(f"check_llama_config: {config_path} does not match the {FAMILY} preset ({len(problems)} mismatch(es)):", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    print(f"check_llama_config: {config_path} matches the {FAMILY} preset: " + ", ".join(f"{k}={v}" for k, v in expected.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
