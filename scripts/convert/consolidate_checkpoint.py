#!/usr/bin/env python3
"""Rewrite a Hugging Face checkpoint into the .bin layout an FT converter reads.

Why: FT's GPT-J converter reads only a single `pytorch_model.bin`; FT's GPT-NeoX
converter globs `*.bin` and crashes with 0 or 1 of them (safetensors-only repos).

  consolidate_checkpoint.py --input HF_DIR --output OUT_DIR --layout single
      -> OUT_DIR/pytorch_model.bin
  consolidate_checkpoint.py --input HF_DIR --output OUT_DIR --layout shards --min-shards 2
      -> OUT_DIR/pytorch_model-0000X-of-0000N.bin (N >= 2) + pytorch_model.bin.index.json

Input may be a single or sharded .bin or .safetensors checkpoint. Config and
tokenizer files are copied. The output is written to a temp sibling and renamed
into place when complete. Runs on the builder (torch); no network.
Exit codes: 0 done, 1 conversion failed, 2 bad arguments/input.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from hf_checkpoint import BIN_INDEX, CheckpointError, copy_side_files, discard, load_state_dict, prepare_output, publish


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]i?B|B)?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 500MB, 5GB, 2GiB)")
    number = float(match.group(1))
    unit = (match.group(2) or "B").upper()
    factor = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}[unit]
    return int(number * factor)


def tensor_bytes(tensor: Any) -> int:
    return int(tensor.numel()) * int(tensor.element_size())


def plan_shards(sizes: list[tuple[str, int]], shard_count: int) -> list[list[str]]:
    """Split tensors, in checkpoint order, into `shard_count` non-empty contiguous groups of similar byte size."""
    if shard_count > len(sizes):
        raise CheckpointError(f"cannot make {shard_count} shards from only {len(sizes)} tensors")
    total = sum(size for _, size in sizes)
    groups: list[list[str]] = [[]]
    filled = 0
    for index, (name, size) in enumerate(sizes):
        to_open = shard_count - len(groups)
        # Open the next shard when this one has its share of bytes, or when
        # every remaining tensor is needed to keep later shards non-empty.
        full = filled >= total * len(groups) / shard_count
        needed = len(sizes) - index <= to_open
        if groups[-1] and to_open > 0 and (full or needed):
            groups.append([])
        groups[-1].append(name)
        filled += size
    return groups


def write_single(state: dict[str, Any], out: Path) -> list[str]:
    import torch

    torch.save(state, str(out / "pytorch_model.bin"))
    return ["pytorch_model.bin"]


def write_shards(state: dict[str, Any], out: Path, min_shards: int, max_shard_bytes: int) -> list[str]:
    import torch

    sizes = [(name, tensor_bytes(t)) for name, t in state.items()]
    total = sum(s for _, s in sizes)
    count = max(min_shards, math.ceil(total / max_shard_bytes) if max_shard_bytes > 0 else 1)
    groups = plan_shards(sizes, count)
    weight_map: dict[str, str] = {}
    files = []
    for number, names in enumerate(groups, start=1):
        filename = f"pytorch_model-{number:05d}-of-{count:05d}.bin"
        torch.save({name: state[name] for name in names}, str(out / filename))
        weight_map.update({name: filename for name in names})
        files.append(filename)
    (out / BIN_INDEX).write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n")
    return files


def check_output(out: Path, expected_names: set[str]) -> None:
    """Reload what was written and compare tensor names, so a truncated write fails here."""
    written = load_state_dict(out)
    if set(written) != expected_names:
        missing = sorted(expected_names - set(written))
        extra = sorted(set(written) - expected_names)
        raise CheckpointError(f"written checkpoint does not match: missing {missing[:5]}, unexpected {extra[:5]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Rewrite a HF checkpoint (.bin or .safetensors, single or sharded) into the .bin layout FT's converters read.",
    )
    parser.add_argument("--input", required=True, type=Path, help="local HF model directory")
    parser.add_argument("--output", required=True, type=Path, help="new directory to create (must not exist or be empty)")
    parser.add_argument("--layout", required=True, choices=("single", "shards"), help="single: one pytorch_model.bin (GPT-J converter); shards: >= --min-shards .bin shards + index (GPT-NeoX converter)")
    parser.add_argument("--min-shards", type=int, default=2, help="minimum shard count for --layout shards (default 2)")
    parser.add_argument("--max-shard-size", type=parse_size, default=parse_size("5GB"), help="largest shard for --layout shards (default 5GB); more shards are made if needed")
    args = parser.parse_args(argv)

    if args.layout == "shards" and args.min_shards < 1:
        print("consolidate_checkpoint: --min-shards must be >= 1", file=sys.stderr)
        return 2
    try:
        state = load_state_dict(args.input)
    except CheckpointError as err:
        print(f"consolidate_checkpoint: {err}", file=sys.stderr)
        return 2
    tmp = None
    try:
        tmp = prepare_output(args.output, args.input)
        copied = copy_side_files(args.input, tmp)
        files = write_single(state, tmp) if args.layout == "single" else write_shards(state, tmp, args.min_shards, args.max_shard_size)
        check_output(tmp, set(state))
        publish(tmp, args.output)
    except (CheckpointError, OSError) as err:
        print(f"consolidate_checkpoint: {err}", file=sys.stderr)
        discard(tmp)
        return 1
    print(
        f"consolidate_checkpoint: wrote {len(state)} tensors to {args.output} as {', '.join(files)}"
        f" (copied {len(copied)} side files: {', '.join(copied) or 'none'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
