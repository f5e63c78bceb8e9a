"""CodeGen -> GPT-J re-layout: a tiny random CodeGen, converted, must give the same logits as GPT-J."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import CodeGenConfig, CodeGenForCausalLM, GPTJForCausalLM, PretrainedConfig

from make_tokenizer import make_tokenizer
from torch_helpers import randomise, run_script

# n_head divisible by CodeGen's 4 model-parallel blocks, 2 heads per block, partial rotary.
TINY = dict(vocab_size=96, n_positions=64, n_ctx=64, n_embd=64, n_layer=3, n_head=8, rotary_dim=4, n_inner=None,
            bos_token_id=1, eos_token_id=2, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


def tiny_codegen(directory: Path, safetensors: bool, seed: int = 0) -> CodeGenForCausalLM:
    torch.manual_seed(seed)
    model = CodeGenForCausalLM(CodeGenConfig(**TINY)).eval()
    randomise(model, seed)
    model.save_pretrained(directory, safe_serialization=safetensors)
    make_tokenizer(directory)
    return model


def logits(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits


@pytest.mark.parametrize("safetensors", [True, False], ids=["from-safetensors", "from-bin"])
def test_converted_model_matches_codegen_logits(tmp_path: Path, safetensors: bool) -> None:
    src, out = tmp_path / "codegen", tmp_path / "gptj"
    codegen = tiny_codegen(src, safetensors)
    result = run_script("codegen_to_gptj.py", "--input", src, "--output", out)
    assert result.returncode == 0, result.stderr

    # The layout FT's GPT-J converter reads: config.json + one pytorch_model.bin.
    assert (out / "pytorch_model.bin").is_file()
    assert not list(out.glob("*.safetensors"))
    config = json.loads((out / "config.json").read_text())
    for key, value in (("n_head", 8), ("n_embd", 64), ("n_layer", 3), ("rotary_dim", 4), ("vocab_size", 96),
                       ("bos_token_id", 1), ("eos_token_id", 2), ("model_type", "gptj")):
        assert config[key] == value, key
    assert (out / "tokenizer.json").is_file() and (out / "tokenizer_config.json").is_file()
    # FT's GPT-J converter reads the raw JSON through PretrainedConfig (no GPT-J
    # class defaults) and the state dict by these names.
    raw = PretrainedConfig.from_json_file(str(out / "config.json")).to_dict()
    for key in ("_name_or_path", "n_head", "n_embd", "n_layer", "rotary_dim", "vocab_size", "bos_token_id", "eos_token_id"):
        assert key in raw, key
    ft_reads = {"transformer.wte.weight", "transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight", "lm_head.bias"}
    for layer in range(TINY["n_layer"]):
        ft_reads |= {f"transformer.h.{layer}.{s}" for s in ("ln_1.bias", "ln_1.weight", "mlp.fc_in.weight", "mlp.fc_in.bias", "mlp.fc_out.weight",
                                                           "mlp.fc_out.bias", "attn.out_proj.weight", "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight")}
    assert ft_reads <= set(torch.load(out / "pytorch_model.bin", weights_only=True))

    gptj = GPTJForCausalLM.from_pretrained(out).eval()
    ids = torch.randint(0, TINY["vocab_size"], (2, 17), generator=torch.Generator().manual_seed(1))
    expected, actual = logits(codegen, ids), logits(gptj, ids)
    assert expected.abs().max() > 1e-2  # a meaningful signal, not all zeros
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)


def test_wrong_qkv_order_would_be_caught(tmp_path: Path) -> None:
    """Negative control: swapping K and V in the converted weights changes the logits well past tolerance."""
    src, out = tmp_path / "codegen", tmp_path / "gptj"
    codegen = tiny_codegen(src, True, seed=3)
    assert run_script("codegen_to_gptj.py", "--input", src, "--output", out).returncode == 0
    gptj = GPTJForCausalLM.from_pretrained(out).eval()
    with torch.no_grad():
        for block in gptj.transformer.h:
            k, v = block.attn.k_proj.weight.clone(), block.attn.v_proj.weight.clone()
            block.attn.k_proj.weight.copy_(v)
            block.attn.v_proj.weight.copy_(k)
    ids = torch.randint(0, TINY["vocab_size"], (1, 9), generator=torch.Generator().manual_seed(2))
    assert (logits(gptj, ids) - logits(codegen, ids)).abs().max() > 1e-3


def test_state_dict_has_exactly_the_gptj_tensors(tmp_path: Path) -> None:
    src, out = tmp_path / "codegen", tmp_path / "gptj"
    tiny_codegen(src, True)
    assert run_script("codegen_to_gptj.py", "--input", src, "--output", out, "--dtype", "fp16").returncode == 0
    state = torch.load(out / "pytorch_model.bin", weights_only=True)
    reference = GPTJForCausalLM(GPTJForCausalLM.config_class.from_pretrained(out)).state_dict()
    assert set(state) == set(reference)
    assert {t.dtype for t in state.values()} == {torch.float16}
    assert json.loads((out / "config.json").read_text())["torch_dtype"] == "float16"
    # Slices were cloned: the file holds each tensor once, not the fused qkv three times.
    size = (out / "pytorch_model.bin").stat().st_size
    assert size < 1.2 * sum(t.numel() * 2 for t in state.values()) + 64 * 1024


def test_refuses_non_codegen_and_bad_head_count(tmp_path: Path) -> None:
    src = tmp_path / "codegen"
    tiny_codegen(src, True)
    config = json.loads((src / "config.json").read_text())
    (src / "config.json").write_text(json.dumps({**config, "n_head": 6, "n_embd": 60}))
    result = run_script("codegen_to_gptj.py", "--input", src, "--output", tmp_path / "o1")
    assert result.returncode == 2 and "not divisible by 4" in result.stderr
    (src / "config.json").write_text(json.dumps({**config, "model_type": "gptj"}))
    result = run_script("codegen_to_gptj.py", "--input", src, "--output", tmp_path / "o2")
    assert result.returncode == 2 and "expected 'codegen'" in result.stderr
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_refuses_existing_output(tmp_path: Path) -> None:
    src, out = tmp_path / "codegen", tmp_path / "gptj"
    tiny_codegen(src, True)
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = run_script("codegen_to_gptj.py", "--input", src, "--output", out)
    assert result.returncode == 1 and "already exists" in result.stderr
    assert (out / "keep.txt").read_text() == "mine"
