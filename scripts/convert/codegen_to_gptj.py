#!/usr/bin/env python3
"""Re-lay a Hugging Face CodeGen checkpoint out as GPT-J, so FT serves it as GPT-J.

CodeGen and GPT-J are the same network except for the attention projection:
CodeGen fuses Q, K and V into one `qkv_proj` whose output rows are laid out for
4 model-parallel ranks. Its forward pass reshapes the 3*d rows into 4 blocks and
splits each block into (Q, V, K) slices of d/4 rows, in that order; the heads of
block b are heads [b*h/4, (b+1)*h/4). So, viewing the weight as
[4, 3, d/4, d], Q = [:, 0], V = [:, 1], K = [:, 2], each flattened back to [d, d].
Every other tensor keeps its name and values.

  codegen_to_gptj.py --input CODEGEN_DIR --output GPTJ_DIR [--dtype keep|fp32|fp16]

Output: config.json (GPT-J, every field FT's GPT-J converter reads written
explicitly), one pytorch_model.bin (the only layout that converter reads), and
the tokenizer files. Written to a temp sibling and renamed when complete.
Runs on the builder inside triton_with_ft (torch); no network.
Exit codes: 0 done, 1 conversion failed, 2 bad arguments/input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from hf_checkpoint import CheckpointError, copy_side_files, discard, load_state_dict, prepare_output, publish

# transformers' CodeGen attention hard-codes this many model-parallel blocks.
CODEGEN_MP_BLOCKS = 4
# Non-persistent buffers that old CodeGen checkpoints still carry; GPT-J rebuilds them.
IGNORED_SUFFIXES = (".attn.causal_mask", ".attn.masked_bias", ".attn.bias")
# Copied unchanged from CodeGen to GPT-J (same names, same shapes).
SAME_NAME = re.compile(
    r"^(transformer\.wte\.weight|transformer\.ln_f\.(weight|bias)|lm_head\.(weight|bias)|"
    r"transformer\.h\.\d+\.(ln_1\.(weight|bias)|attn\.out_proj\.weight|mlp\.fc_(in|out)\.(weight|bias)))$"
)
QKV = re.compile(r"^transformer\.h\.(\d+)\.attn\.qkv_proj\.weight$")


class ConversionError(RuntimeError):
    pass


def read_codegen_config(directory: Path) -> dict[str, Any]:
    path = directory / "config.json"
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ConversionError(f"cannot read {path}: {err}") from None
    if not isinstance(raw, dict):
        raise ConversionError(f"{path}: not a JSON object")
    config: dict[str, Any] = raw
    if config.get("model_type") != "codegen":
        raise ConversionError(f"{path}: model_type is {config.get('model_type')!r}, expected 'codegen'")
    for key in ("n_layer", "n_embd", "n_head", "vocab_size", "n_positions"):
        if not isinstance(config.get(key), int):
            raise ConversionError(f"{path}: '{key}' must be an integer")
    if not isinstance(config.get("rotary_dim"), int):
        # FT's GPT-J converter writes rotary_embedding from rotary_dim and needs a number.
        raise ConversionError(f"{path}: 'rotary_dim' must be an integer, got {config.get('rotary_dim')!r}")
    if config["n_embd"] % config["n_head"]:
        raise ConversionError(f"{path}: n_embd {config['n_embd']} is not divisible by n_head {config['n_head']}")
    if config["n_head"] % CODEGEN_MP_BLOCKS:
        raise ConversionError(
            f"{path}: n_head {config['n_head']} is not divisible by {CODEGEN_MP_BLOCKS}, the qkv layout CodeGen uses"
        )
    return config


def gptj_config(codegen: dict[str, Any], dtype: str) -> dict[str, Any]:
    """GPT-J config.json with every field written out: FT's converter reads the raw JSON, without class defaults."""
    out: dict[str, Any] = {
        "architectures": ["GPTJForCausalLM"],
        "model_type": "gptj",
        "vocab_size": codegen["vocab_size"],
        "n_positions": codegen["n_positions"],
        "n_embd": codegen["n_embd"],
        "n_layer": codegen["n_layer"],
        "n_head": codegen["n_head"],
        "rotary_dim": codegen["rotary_dim"],
        "n_inner": codegen.get("n_inner"),
        "activation_function": codegen.get("activation_function", "gelu_new"),
        "resid_pdrop": codegen.get("resid_pdrop", 0.0),
        "embd_pdrop": codegen.get("embd_pdrop", 0.0),
        "attn_pdrop": codegen.get("attn_pdrop", 0.0),
        "layer_norm_epsilon": codegen.get("layer_norm_epsilon", 1e-5),
        "initializer_range": codegen.get("initializer_range", 0.02),
        "use_cache": True,
        "bos_token_id": codegen.get("bos_token_id"),
        "eos_token_id": codegen.get("eos_token_id"),
        "tie_word_embeddings": codegen.get("tie_word_embeddings", False),
        "torch_dtype": dtype,
    }
    if codegen.get("tokenizer_class"):
        out["tokenizer_class"] = codegen["tokenizer_class"]
    for key in ("bos_token_id", "eos_token_id"):
        if not isinstance(out[key], int):
            raise ConversionError(f"CodeGen config has no integer {key}; FT needs it for start_id/end_id")
    return out


def split_qkv(weight: Any, n_embd: int) -> tuple[Any, Any, Any]:
    """CodeGen's fused [3d, d] qkv_proj weight -> GPT-J's (q, k, v) [d, d] weights."""
    if tuple(weight.shape) != (3 * n_embd, n_embd):
        raise ConversionError(f"qkv_proj weight has shape {tuple(weight.shape)}, expected {(3 * n_embd, n_embd)}")
    local = n_embd // CODEGEN_MP_BLOCKS
    blocks = weight.reshape(CODEGEN_MP_BLOCKS, 3, local, n_embd)
    q, v, k = (blocks[:, i].reshape(n_embd, n_embd) for i in range(3))
    return q, k, v


def relayout(state: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    n_embd, n_layer = config["n_embd"], config["n_layer"]
    out: dict[str, Any] = {}
    unknown = []
    for name, tensor in state.items():
        if name.endswith(IGNORED_SUFFIXES):
            continue
        if SAME_NAME.match(name):
            out[name] = tensor
        elif match := QKV.match(name):
            prefix = f"transformer.h.{match.group(1)}.attn."
            q, k, v = split_qkv(tensor, n_embd)
            out[prefix + "q_proj.weight"], out[prefix + "k_proj.weight"], out[prefix + "v_proj.weight"] = q, k, v
        else:
            unknown.append(name)
    if unknown:
        raise ConversionError(f"tensors this re-layout does not know (refusing to drop them): {', '.join(sorted(unknown)[:10])}")
    wanted = {"transformer.wte.weight", "transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight", "lm_head.bias"}
    for layer in range(n_layer):
        base = f"transformer.h.{layer}."
        wanted |= {base + s for s in ("ln_1.weight", "ln_1.bias", "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight",
                                      "attn.out_proj.weight", "mlp.fc_in.weight", "mlp.fc_in.bias", "mlp.fc_out.weight", "mlp.fc_out.bias")}
    missing = sorted(wanted - out.keys())
    if missing:
        raise ConversionError(f"the CodeGen checkpoint lacks tensors GPT-J needs: {', '.join(missing[:10])}")
    extra = sorted(out.keys() - wanted)
    if extra:
        raise ConversionError(f"tensors beyond n_layer={n_layer}: {', '.join(extra[:10])}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Re-lay a local HF CodeGen checkpoint out as a HF GPT-J checkpoint (single pytorch_model.bin).")
    parser.add_argument("--input", required=True, type=Path, help="local HF CodeGen directory (config.json + weights + tokenizer)")
    parser.add_argument("--output", required=True, type=Path, help="new GPT-J directory to create (must not exist or be empty)")
    parser.add_argument("--dtype", choices=("keep", "fp32", "fp16"), default="keep", help="dtype of the written tensors (default: keep the checkpoint's)")
    args = parser.parse_args(argv)

    try:
        config = read_codegen_config(args.input)
        state = load_state_dict(args.input)
    except (ConversionError, CheckpointError) as err:
        print(f"codegen_to_gptj: {err}", file=sys.stderr)
        return 2
    import torch

    tmp = None
    try:
        tensors = relayout(state, config)
        cast = {"fp32": torch.float32, "fp16": torch.float16}.get(args.dtype)
        # clone(): the q/k/v slices are views of qkv_proj, and torch.save would
        # otherwise store the whole fused storage three times.
        tensors = {name: (t.to(cast) if cast is not None else t).contiguous().clone() for name, t in tensors.items()}
        dtypes = {str(t.dtype).replace("torch.", "") for t in tensors.values()}
        dtype = dtypes.pop() if len(dtypes) == 1 else "float32"
        tmp = prepare_output(args.output, args.input)
        copy_side_files(args.input, tmp, skip=("config.json",))
        (tmp / "config.json").write_text(json.dumps(gptj_config(config, dtype), indent=2) + "\n")
        torch.save(tensors, str(tmp / "pytorch_model.bin"))
        publish(tmp, args.output)
    except (ConversionError, CheckpointError, OSError) as err:
        print(f"codegen_to_gptj: {err}", file=sys.stderr)
        discard(tmp)
        return 1
    print(f"codegen_to_gptj: wrote {len(tensors)} GPT-J tensors ({config['n_layer']} layers, {dtype}) to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
