#!/usr/bin/env python3
"""Assemble the project's vLLM model repository for one checkpoint.

    repository.py --checkpoint DIR --out DIR [--device cpu|cuda] [--max-batch-size N] ...

Writes <out>/ensemble/config.pbtxt and <out>/ensemble/1/ with
images/vllm/model_repository/ensemble/1/model.py and, beside it, the shared
packages it imports (tritonft, tritonvllm): the Python-backend stub runs an
isolated interpreter that ignores PYTHONPATH, and the model's folder is on its
sys.path.

Nothing is rendered here: the stack's own renderer (infra/plan/vllmRepository.ts,
through its CLI scripts/vllm-repository.ts) writes the repository, so the CPU
tritonserver tests prove what a stack bakes. This file only states the CPU
tests' settings. images/vllm/model_repository/ensemble/config.pbtxt is the
renderer's output for the reference settings below (test_config.py keeps
them equal).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TSX = REPO / "node_modules" / "tsx" / "dist" / "cli.mjs"
CLI = REPO / "scripts" / "vllm-repository.ts"
REFERENCE_CONFIG = REPO / "images" / "vllm" / "model_repository" / "ensemble" / "config.pbtxt"

# The reference settings of the committed config.pbtxt: one GPU, a 2048-token model.
REFERENCE: dict[str, Any] = {
    "modelPath": "/opt/triton-ft/model",
    "device": "cuda",
    "dtype": "auto",
    "tensorParallel": 1,
    "gpuMemoryUtilization": 0.9,
    "maxModelLen": 2048,
    "kvCacheGiB": 4,
    "maxNumSeqs": 8,
    "maxInputLen": 1024,
    "maxOutputLen": 1024,
    "maxPromptBytes": 32768,
    "maxLogprobs": 20,
}


def _renderer(*args: str) -> str:
    """The plan's renderer (infra/plan/vllmRepository.ts) through its CLI."""
    node = os.environ.get("NODE", shutil.which("node") or "node")
    result = subprocess.run([node, str(TSX), str(CLI), *args], capture_output=True, text=True, check=False, cwd=REPO)
    if result.returncode != 0:
        raise RuntimeError(f"scripts/vllm-repository.ts failed: {result.stderr}")
    return result.stdout


def render_config(settings: dict[str, Any], name: str = "ensemble") -> str:
    return _renderer("--print-config", "--settings", json.dumps(settings), "--name", name)


def assemble(out: Path, settings: dict[str, Any], name: str = "ensemble") -> Path:
    """One model of the repository: `ensemble` as the gateway calls it, or another name
    when a test serves several checkpoints from one server."""
    printed = json.loads(_renderer("--out", str(out), "--settings", json.dumps(settings), "--name", name))
    return Path(printed["model"])


def cpu_settings(checkpoint: Path, max_model_len: int = 128, max_num_seqs: int = 8) -> dict[str, Any]:
    """Settings for a tiny checkpoint on a CPU tritonserver."""
    return {
        "modelPath": str(checkpoint.resolve()),
        "device": "cpu",
        # fp32: the reference tokens come from transformers in fp32.
        "dtype": "float32",
        "tensorParallel": 1,
        "gpuMemoryUtilization": 0.9,
        "maxModelLen": max_model_len,
        "kvCacheGiB": 1,
        "maxNumSeqs": max_num_seqs,
        "maxInputLen": max_model_len // 2,
        "maxOutputLen": max_model_len // 2,
        "maxPromptBytes": 32 * max_model_len,
        "maxLogprobs": 20,
        # Start in seconds rather than compile for a minute: decode speed is not what the CPU tests measure.
        "enforceEager": True,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Assemble the vLLM model repository for one checkpoint.")
    parser.add_argument("--checkpoint", type=Path, help="Hugging Face checkpoint folder")
    parser.add_argument("--out", type=Path, help="model repository folder to write")
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--max-model-len", type=int, default=128)
    parser.add_argument("--write-reference", action="store_true", help=f"rewrite {REFERENCE_CONFIG.relative_to(REPO)}")
    args = parser.parse_args(argv)
    if args.write_reference:
        REFERENCE_CONFIG.write_text(render_config(REFERENCE))
        return 0
    if args.checkpoint is None or args.out is None:
        parser.error("--checkpoint and --out are required")
    model = assemble(args.out, cpu_settings(args.checkpoint, args.max_model_len, args.max_batch_size))
    print(json.dumps({"repository": str(args.out.resolve()), "model": str(model)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
