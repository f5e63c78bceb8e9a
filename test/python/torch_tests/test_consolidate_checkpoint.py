"""consolidate_checkpoint.py: sharded/safetensors checkpoints into the .bin layouts FT's converters read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

from torch_helpers import randomise, run_script

TINY_NEOX = dict(vocab_size=80, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 rotary_pct=0.5, max_position_embeddings=64, bos_token_id=0, eos_token_id=0)


def tiny_neox(directory: Path, safetensors: bool, shard: str | None) -> GPTNeoXForCausalLM:
    model = GPTNeoXForCausalLM(GPTNeoXConfig(**TINY_NEOX)).eval()
    randomise(model, 7)
    kwargs = {"max_shard_size": shard} if shard else {}
    model.save_pretrained(directory, safe_serialization=safetensors, **kwargs)
    (directory / "tokenizer.json").write_text("{}")
    return model


def same_logits(a: torch.nn.Module, b: torch.nn.Module) -> None:
    ids = torch.randint(0, TINY_NEOX["vocab_size"], (2, 11), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(a(input_ids=ids).logits, b(input_ids=ids).logits, rtol=0, atol=0)


@pytest.mark.parametrize(
    "safetensors,shard",
    [(True, None), (True, "40KB"), (False, "40KB")],
    ids=["single-safetensors", "sharded-safetensors", "sharded-bin"],
)
def test_single_layout(tmp_path: Path, safetensors: bool, shard: str | None) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    model = tiny_neox(src, safetensors, shard)
    if shard:
        assert len(list(src.glob("model-*" if safetensors else "pytorch_model-*"))) >= 2, "fixture should be sharded"
    result = run_script("consolidate_checkpoint.py", "--input", src, "--output", out, "--layout", "single")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.glob("*.bin")) == ["pytorch_model.bin"]
    assert not list(out.glob("*.safetensors")) and not (out / "pytorch_model.bin.index.json").exists()
    assert (out / "config.json").is_file() and (out / "tokenizer.json").is_file()
    state = torch.load(out / "pytorch_model.bin", weights_only=True)
    reference = model.state_dict()
    assert set(reference) <= set(state)
    for name, tensor in state.items():
        torch.testing.assert_close(tensor, reference[name], rtol=0, atol=0)
    same_logits(model, GPTNeoXForCausalLM.from_pretrained(out).eval())


def test_shards_layout_from_single_safetensors(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    model = tiny_neox(src, True, None)
    result = run_script("consolidate_checkpoint.py", "--input", src, "--output", out, "--layout", "shards", "--min-shards", "3")
    assert result.returncode == 0, result.stderr
    shards = sorted(p.name for p in out.glob("*.bin"))
    assert shards == [f"pytorch_model-0000{i}-of-00003.bin" for i in (1, 2, 3)]
    index = json.loads((out / "pytorch_model.bin.index.json").read_text())
    assert set(index["weight_map"].values()) == set(shards)
    assert set(model.state_dict()) <= set(index["weight_map"])
    same_logits(model, GPTNeoXForCausalLM.from_pretrained(out).eval())


def test_shards_layout_respects_max_shard_size(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    tiny_neox(src, True, None)
    result = run_script("consolidate_checkpoint.py", "--input", src, "--output", out, "--layout", "shards", "--max-shard-size", "10KB")
    assert result.returncode == 0, result.stderr
    assert len(list(out.glob("pytorch_model-*.bin"))) >= 4


def test_no_weights_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.json").write_text("{}")
    result = run_script("consolidate_checkpoint.py", "--input", tmp_path / "src", "--output", tmp_path / "out", "--layout", "single")
    assert result.returncode == 2
    assert "no weights found" in result.stderr
    assert not (tmp_path / "out").exists()


def test_index_naming_a_missing_shard_is_a_clear_error(tmp_path: Path) -> None:
    src = tmp_path / "src"
    tiny_neox(src, True, "40KB")
    victim = sorted(src.glob("model-*.safetensors"))[-1]
    victim.unlink()
    result = run_script("consolidate_checkpoint.py", "--input", src, "--output", tmp_path / "out", "--layout", "single")
    assert result.returncode == 2
    assert victim.name in result.stderr and "missing" in result.stderr


def test_more_shards_than_tensors_fails_and_leaves_nothing(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    tiny_neox(src, True, None)
    result = run_script("consolidate_checkpoint.py", "--input", src, "--output", out, "--layout", "shards", "--min-shards", "500")
    assert result.returncode == 1
    assert "cannot make 500 shards" in result.stderr
    assert not out.exists() and not list(tmp_path.glob(".out*"))
