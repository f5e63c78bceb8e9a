#!/usr/bin/env python3
"""Assemble the project's vLLM model repository for one checkpoint.

    repository.py --checkpoint DIR --out DIR [--device cpu|cuda] [--max-batch-size N] ...

Writes <out>/ensemble/config.pbtxt and <out>/ensemble/1/ with
images/vllm/model_repository/ensemble/1/model.py and, beside it, the shared
packages it imports (tritonft, tritonvllm): the Python-backend stub runs an
isolated interpreter that ignores PYTHONPATH, and the model's folder is on its
sys.path (test/triton/assemble.ts does the same for the FT models).

config.pbtxt is rendered here from the ensemble contract
(docs/architecture.md "Ensemble contract", the same tensors the FT repository
renders in infra/plan/modelRepository.ts) plus vLLM's extra input and
outputs, and the engine parameters images/vllm/python/tritonvllm/settings.py
reads. images/vllm/model_repository/ensemble/config.pbtxt is this renderer's
output for the reference settings below (test_config.py keeps them equal);
the stack's renderer takes it over when a stack deploys vLLM models.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODEL_PY = REPO / "images" / "vllm" / "model_repository" / "ensemble" / "1" / "model.py"
PACKAGES = (REPO / "images" / "server" / "python" / "tritonft", REPO / "images" / "vllm" / "python" / "tritonvllm")
REFERENCE_CONFIG = REPO / "images" / "vllm" / "model_repository" / "ensemble" / "config.pbtxt"

# (name, type, dims, optional): the FT ensemble's tensors, in its order, then vLLM's own.
INPUTS = [
    ("text_input", "TYPE_STRING", [1], False),
    ("max_tokens", "TYPE_UINT32", [1], False),
    ("bad_words", "TYPE_STRING", [-1], True),
    ("stop_words", "TYPE_STRING", [-1], True),
    ("top_k", "TYPE_UINT32", [1], True),
    ("top_p", "TYPE_FP32", [1], True),
    ("temperature", "TYPE_FP32", [1], True),
    ("repetition_penalty", "TYPE_FP32", [1], True),
    ("random_seed", "TYPE_UINT64", [1], True),
    ("presence_penalty", "TYPE_FP32", [1], True),
    ("return_tokens", "TYPE_UINT32", [1], True),
    # vLLM only: how many top alternatives to return per generated token (OpenAI `logprobs`/`top_logprobs`).
    ("top_logprobs", "TYPE_UINT32", [1], True),
]
OUTPUTS = [
    ("text_output", "TYPE_STRING", [1]),
    ("input_token_count", "TYPE_UINT32", [1]),
    ("output_token_count", "TYPE_UINT32", [1]),
    ("output_log_probs", "TYPE_FP32", [-1]),
    ("cum_log_probs", "TYPE_FP32", [1]),
    ("output_tokens", "TYPE_STRING", [-1]),
    # vLLM only: [tokens, top_logprobs] texts and log probabilities of each token's top alternatives.
    ("output_top_tokens", "TYPE_STRING", [-1, -1]),
    ("output_top_log_probs", "TYPE_FP32", [-1, -1]),
]

# The reference settings of the committed config.pbtxt: one GPU, a 2048-token model.
REFERENCE = {
    "max_batch_size": 8,
    "parameters": {
        "model_path": "/opt/triton-ft/model",
        "device": "cuda",
        "dtype": "auto",
        "tensor_parallel_size": "1",
        "gpu_memory_utilization": "0.9",
        "max_model_len": "2048",
        "kv_cache_gib": "4",
        "max_num_seqs": "8",
        "max_input_len": "1024",
        "max_output_len": "1024",
        "max_prompt_bytes": "32768",
        "max_logprobs": "20",
    },
}


def _dims(dims: list[int]) -> str:
    return ", ".join(str(d) for d in dims)


def render_config(max_batch_size: int, parameters: dict[str, str], name: str = "ensemble") -> str:
    lines = [
        "# Rendered by test/vllm/repository.py (the project's vLLM model, images/vllm).",
        f'name: "{name}"',
        'backend: "python"',
        f"max_batch_size: {max_batch_size}",
        "input [",
    ]
    lines.append(
        ",\n".join(
            f'  {{\n    name: "{n}"\n    data_type: {t}\n    dims: [ {_dims(d)} ]' + ("\n    optional: true" if o else "") + "\n  }"
            for n, t, d, o in INPUTS
        )
    )
    lines += ["]", "output ["]
    lines.append(",\n".join(f'  {{\n    name: "{n}"\n    data_type: {t}\n    dims: [ {_dims(d)} ]\n  }}' for n, t, d in OUTPUTS))
    lines += [
        "]",
        # One instance: vLLM batches every request in flight itself; KIND_MODEL leaves the devices to vLLM.
        "instance_group [ { count: 1 kind: KIND_MODEL } ]",
        "model_transaction_policy { decoupled: true }",
    ]
    for key, value in parameters.items():
        lines.append(f'parameters {{ key: "{key}" value {{ string_value: "{value}" }} }}')
    return "\n".join(lines) + "\n"


def assemble(out: Path, max_batch_size: int, parameters: dict[str, str], name: str = "ensemble") -> Path:
    """One model of the repository: `ensemble` as the gateway calls it, or another name
    when a test serves several checkpoints from one server."""
    model = out / name
    if model.exists():
        shutil.rmtree(model)
    (model / "1").mkdir(parents=True)
    shutil.copy2(MODEL_PY, model / "1" / "model.py")
    for package in PACKAGES:
        shutil.copytree(package, model / "1" / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    (model / "config.pbtxt").write_text(render_config(max_batch_size, parameters, name))
    return model


def cpu_parameters(checkpoint: Path, max_model_len: int = 128) -> dict[str, str]:
    """Settings for a tiny checkpoint on a CPU tritonserver."""
    return {
        "model_path": str(checkpoint.resolve()),
        "device": "cpu",
        # fp32: the reference tokens come from transformers in fp32.
        "dtype": "float32",
        "tensor_parallel_size": "1",
        "gpu_memory_utilization": "0.9",
        "max_model_len": str(max_model_len),
        "kv_cache_gib": "1",
        "max_num_seqs": "8",
        "max_input_len": str(max_model_len // 2),
        "max_output_len": str(max_model_len // 2),
        "max_prompt_bytes": str(32 * max_model_len),
        "max_logprobs": "20",
        # Start in seconds rather than compile for a minute: decode speed is not what the CPU tests measure.
        "enforce_eager": "true",
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
        REFERENCE_CONFIG.write_text(render_config(REFERENCE["max_batch_size"], REFERENCE["parameters"]))  # type: ignore[arg-type]
        return 0
    if args.checkpoint is None or args.out is None:
        parser.error("--checkpoint and --out are required")
    model = assemble(args.out, args.max_batch_size, cpu_parameters(args.checkpoint, args.max_model_len))
    print(json.dumps({"repository": str(args.out.resolve()), "model": str(model)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
