"""scripts/convert/verify_weights.py against synthetic converted folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CONVERT_SCRIPTS
from ftfolder import make_gptj_folder

SCRIPT = CONVERT_SCRIPTS / "verify_weights.py"


def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=60)


def test_complete_folder_passes_and_matches_upstream_file_count(tmp_path: Path) -> None:
    folder, expected, plan = make_gptj_folder(tmp_path, tp=2)
    # FT's GPT-J converter writes 32 files at TP2 for 2 layers, config.ini included.
    assert len(plan["files"]) + 1 == 32
    result = run(folder, "--expected", expected)
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout and "fp32" in result.stdout


def test_tp1_file_count(tmp_path: Path) -> None:
    folder, expected, plan = make_gptj_folder(tmp_path, tp=1)
    assert len(plan["files"]) + 1 == 22
    assert run(folder, "--expected", expected).returncode == 0


def test_missing_file_fails_naming_it(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    (folder / "model.lm_head.weight.bin").unlink()
    (folder / "model.layers.1.attention.query_key_value.weight.1.bin").unlink()
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert "missing: model.lm_head.weight.bin" in result.stderr
    assert "missing: model.layers.1.attention.query_key_value.weight.1.bin" in result.stderr
    assert "2 problem(s)" in result.stderr


def test_wrong_size_fails_naming_it(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    target = folder / "model.layers.0.mlp.dense_h_to_4h.bias.0.bin"
    target.write_bytes(target.read_bytes()[:-4])
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert "wrong size: model.layers.0.mlp.dense_h_to_4h.bias.0.bin" in result.stderr


def test_config_mismatch_fails_naming_key(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    ini = folder / "config.ini"
    ini.write_text(ini.read_text().replace("vocab_size = 40", "vocab_size = 50400").replace("num_layer = 2\n", ""))
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert "vocab_size = '50400', expected '40'" in result.stderr
    assert "num_layer is missing" in result.stderr


def test_missing_config_ini_fails(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    (folder / "config.ini").unlink()
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert "config.ini: missing" in result.stderr


def test_wrong_section_fails(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    ini = folder / "config.ini"
    ini.write_text(ini.read_text().replace("[gptj]", "[gptneox]"))
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert "no [gptj] section" in result.stderr


def test_fp16_sizes_follow_config_ini(tmp_path: Path) -> None:
    folder, expected, plan = make_gptj_folder(tmp_path)
    ini = folder / "config.ini"
    ini.write_text(ini.read_text().replace("weight_data_type = fp32", "weight_data_type = fp16"))
    # fp32-sized files under an fp16 config: every file is twice too big.
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert result.stderr.count("wrong size:") == len(plan["files"])


def test_extra_file_only_warns(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    (folder / "model.stray.bin").write_bytes(b"\0" * 8)
    result = run(folder, "--expected", expected)
    assert result.returncode == 0
    assert "warning: unexpected file not in the plan: model.stray.bin" in result.stderr


@pytest.mark.parametrize(
    "mutate,fragment",
    [
        (lambda e: e.pop("section"), "'section'"),
        (lambda e: e.update(tensorParallel=0), "tensorParallel"),
        (lambda e: e["config"].update(head_num=16), "string values"),
        (lambda e: e["files"].append({"name": "model.wte.bin", "elements": 1}), "duplicate"),
        (lambda e: e["files"].append({"name": "config.ini", "elements": 1}), "config.ini"),
    ],
)
def test_malformed_expected_json_is_a_usage_error(tmp_path: Path, mutate: object, fragment: str) -> None:
    folder, expected_path, plan = make_gptj_folder(tmp_path)
    mutate(plan)  # type: ignore[operator]
    expected_path.write_text(json.dumps(plan))
    result = run(folder, "--expected", expected_path)
    assert result.returncode == 2
    assert fragment in result.stderr
