#!/usr/bin/env python3
"""Write tiny random Hugging Face checkpoints of the four families vLLM serves here.

    make_checkpoints.py <outdir> [--seed N]

Writes <outdir>/{gptj,gptneox,gpt2,codegen}: each a transformers config, random
weights from a fixed seed saved as safetensors, and the test tokenizer that
test/python/fixtures/make_tokenizer.py trains locally (no network, ever). The
CodeGen folder is the project's re-layout of a tiny CodeGen checkpoint
(scripts/convert/codegen_to_gptj.py, the same step a stack runs), so vLLM
serves it as GPT-J; the original CodeGen checkpoint stays in codegen-source
for the reference tokens. Prints one JSON line: {family: folder, ...,
"codegen-source": folder}.

Shapes: every attention head is 64 wide (a size vLLM's CPU attention
implements), two layers, a 512-token vocabulary (the tokenizer's size). Every
parameter is drawn from N(0, 0.2^2), layer norms included, so the greedy
tokens depend on every tensor and a mixed-up weight changes them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "test" / "python" / "fixtures"))

from make_tokenizer import make_tokenizer  # noqa: E402

VOCAB = 512
POSITIONS = 128
HIDDEN = 256
HEADS = 4  # 64-wide heads; CodeGen needs a multiple of 4 heads
LAYERS = 2


def configs(end_id: int) -> dict[str, object]:
    from transformers import CodeGenConfig, GPT2Config, GPTJConfig, GPTNeoXConfig

    common = dict(bos_token_id=end_id, eos_token_id=end_id, tie_word_embeddings=False)
    return {
        "gptj": GPTJConfig(vocab_size=VOCAB, n_positions=POSITIONS, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                           rotary_dim=16, **common),
        "gptneox": GPTNeoXConfig(vocab_size=VOCAB, max_position_embeddings=POSITIONS, hidden_size=HIDDEN,
                                 num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=4 * HIDDEN,
                                 rotary_pct=0.25, use_parallel_residual=True, **common),
        "gpt2": GPT2Config(vocab_size=VOCAB, n_positions=POSITIONS, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                           **common),
        "codegen-source": CodeGenConfig(vocab_size=VOCAB, n_positions=POSITIONS, n_ctx=POSITIONS, n_embd=HIDDEN,
                                        n_layer=LAYERS, n_head=HEADS, rotary_dim=16, **common),
    }


def write_checkpoint(directory: Path, config: object, seed: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 0.2)
    model.save_pretrained(directory, safe_serialization=True)
    make_tokenizer(directory)


def make_checkpoints(outdir: Path, seed: int = 0) -> dict[str, str]:
    outdir.mkdir(parents=True, exist_ok=True)
    end_id = int(make_tokenizer(outdir / "tokenizer")["end_id"])  # type: ignore[call-overload]
    written: dict[str, str] = {}
    for i, (family, config) in enumerate(configs(end_id).items()):
        target = outdir / family
        write_checkpoint(target, config, seed + i)
        written[family] = str(target)
    # The stack's own re-layout, as the fetch step runs it for a CodeGen model.
    relaid = outdir / "codegen"
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "convert" / "codegen_to_gptj.py"), "--input", written["codegen-source"],
         "--output", str(relaid)],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"codegen_to_gptj.py failed ({result.returncode}): {result.stderr.strip()}")
    written["codegen"] = str(relaid)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(make_checkpoints(args.outdir, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
