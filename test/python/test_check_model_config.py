"""scripts/convert/check_model_config.py with config.json files shaped like the seeds' models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import CONVERT_SCRIPTS

SCRIPT = CONVERT_SCRIPTS / "check_model_config.py"
LLAMA_SCRIPT = CONVERT_SCRIPTS / "check_llama_config.py"

# Field values as in the public configs of the models named in upstream-facts.md.
PYTHIA_69B = {"model_type": "gpt_neox", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
              "intermediate_size": 16384, "vocab_size": 50432, "rotary_pct": 0.25, "max_position_embeddings": 2048,
              "bos_token_id": 0, "eos_token_id": 0}
PYTHIA_ARCH = {"family": "gptneox", "layers": 32, "hidden": 4096, "heads": 32, "ffn": 16384, "vocab": 50432,
               "rotaryDims": 32, "maxPositions": 2048, "startId": 0, "endId": 0}
GPTJ_6B = {"model_type": "gptj", "n_layer": 28, "n_embd": 4096, "n_head": 16, "n_inner": None, "vocab_size": 50400,
           "rotary_dim": 64, "n_positions": 2048, "bos_token_id": 50256, "eos_token_id": 50256}
GPTJ_ARCH = {"family": "gptj", "layers": 28, "hidden": 4096, "heads": 16, "ffn": 16384, "vocab": 50400,
             "rotaryDims": 64, "maxPositions": 2048, "startId": 50256, "endId": 50256}
GPT2 = {"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "n_inner": None, "vocab_size": 50257,
        "n_positions": 1024, "n_ctx": 1024, "bos_token_id": 50256, "eos_token_id": 50256}
GPT2_ARCH = {"family": "gpt", "layers": 12, "hidden": 768, "heads": 12, "ffn": 3072, "vocab": 50257,
             "rotaryDims": 0, "maxPositions": 1024, "startId": 50256, "endId": 50256}
CODEGEN_2B = {"model_type": "codegen", "n_layer": 32, "n_embd": 2560, "n_head": 32, "n_inner": None, "vocab_size": 51200,
              "rotary_dim": 64, "n_positions": 2048, "n_ctx": 2048, "bos_token_id": 1, "eos_token_id": 50256}
CODEGEN_ARCH = {"family": "codegen", "layers": 32, "hidden": 2560, "heads": 32, "ffn": 10240, "vocab": 51200,
                "rotaryDims": 64, "maxPositions": 2048, "startId": 1, "endId": 50256}
TINYLLAMA = {"model_type": "llama", "num_hidden_layers": 22, "hidden_size": 2048, "num_attention_heads": 32,
             "num_key_value_heads": 4, "intermediate_size": 5632, "vocab_size": 32000, "max_position_embeddings": 2048,
             "bos_token_id": 1, "eos_token_id": 2}
TINYLLAMA_ARCH = {"family": "llama", "layers": 22, "hidden": 2048, "heads": 32, "kvHeads": 4, "ffn": 5632, "vocab": 32000,
                  "rotaryDims": 64, "maxPositions": 2048, "startId": 1, "endId": 2}


def run(tmp_path: Path, config: dict[str, Any], arch: Any, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "arch.json").write_text(json.dumps(arch))
    return subprocess.run([sys.executable, str(SCRIPT), "--config", str(tmp_path / "config.json"), "--expected", str(tmp_path / "arch.json"), *extra],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("config,arch", [(PYTHIA_69B, PYTHIA_ARCH), (GPTJ_6B, GPTJ_ARCH), (GPT2, GPT2_ARCH), (CODEGEN_2B, CODEGEN_ARCH)],
                         ids=["gptneox", "gptj", "gpt", "codegen"])
def test_matching_configs_pass(tmp_path: Path, config: dict[str, Any], arch: dict[str, Any]) -> None:
    result = run(tmp_path, config, arch)
    assert result.returncode == 0, result.stderr
    assert "matches" in result.stdout


def test_every_mismatch_is_named(tmp_path: Path) -> None:
    # KoGPT's real vocab with GPT-J's example vocab in the preset, and a wrong rotary and end id.
    config = {**GPTJ_6B, "vocab_size": 64512, "rotary_dim": 32, "eos_token_id": 1}
    result = run(tmp_path, config, GPTJ_ARCH)
    assert result.returncode == 1
    assert "vocab: preset has 50400, config.json has 64512" in result.stderr
    assert "rotaryDims: preset has 64, config.json has 32" in result.stderr
    assert "endId: preset has 50256, config.json has 1" in result.stderr
    assert "3 mismatch(es)" in result.stderr


def run_llama(tmp_path: Path, config: dict[str, Any], arch: Any) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "arch.json").write_text(json.dumps(arch))
    return subprocess.run([sys.executable, str(LLAMA_SCRIPT), "--config", str(tmp_path / "config.json"), "--expected", str(tmp_path / "arch.json")],
                          capture_output=True, text=True, timeout=60)


def test_llama_config_matches(tmp_path: Path) -> None:
    result = run_llama(tmp_path, TINYLLAMA, TINYLLAMA_ARCH)
    assert result.returncode == 0, result.stderr
    assert "matches the llama preset" in result.stdout


def test_llama_key_value_heads_are_checked(tmp_path: Path) -> None:
    # Grouped-query attention: a preset with the query heads as key/value heads is named.
    result = run_llama(tmp_path, TINYLLAMA, {**TINYLLAMA_ARCH, "kvHeads": 32})
    assert result.returncode == 1
    assert "kvHeads: preset has 32, config.json has 4" in result.stderr


def test_neox_rotary_comes_from_rotary_pct(tmp_path: Path) -> None:
    result = run(tmp_path, {**PYTHIA_69B, "rotary_pct": 1.0}, PYTHIA_ARCH)
    assert result.returncode == 1
    assert "rotaryDims: preset has 32, config.json has 128" in result.stderr


def test_explicit_n_inner_is_used(tmp_path: Path) -> None:
    result = run(tmp_path, {**GPTJ_6B, "n_inner": 8192}, GPTJ_ARCH)
    assert result.returncode == 1
    assert "ffn: preset has 16384, config.json has 8192" in result.stderr


def test_null_ffn_in_preset_means_4x_hidden(tmp_path: Path) -> None:
    assert run(tmp_path, GPT2, {**GPT2_ARCH, "ffn": None}).returncode == 0


def test_missing_field_and_wrong_model_type(tmp_path: Path) -> None:
    config = {k: v for k, v in PYTHIA_69B.items() if k != "rotary_pct"}
    result = run(tmp_path, {**config, "model_type": "llama"}, PYTHIA_ARCH)
    assert result.returncode == 1
    assert "rotaryDims: config.json has no usable rotary_pct" in result.stderr
    assert "model_type: config.json says 'llama'" in result.stderr


def test_family_flag_and_nested_arch(tmp_path: Path) -> None:
    arch = {k: v for k, v in CODEGEN_ARCH.items() if k != "family"}
    assert run(tmp_path, CODEGEN_2B, {"arch": arch}, "--family", "codegen").returncode == 0
    result = run(tmp_path, CODEGEN_2B, {"arch": arch})
    assert result.returncode == 2
    assert "family must be one of" in result.stderr


def test_incomplete_expected_is_a_usage_error(tmp_path: Path) -> None:
    arch = {k: v for k, v in GPTJ_ARCH.items() if k != "maxPositions"}
    result = run(tmp_path, GPTJ_6B, arch)
    assert result.returncode == 2
    assert "no 'maxPositions'" in result.stderr
