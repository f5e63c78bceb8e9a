"""scripts/convert/to_fp16.py on a small synthetic converted folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import to_fp16

from conftest import CONVERT_SCRIPTS
from ftfolder import make_gptj_folder

SCRIPT = CONVERT_SCRIPTS / "to_fp16.py"


def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def siblings_left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}."))


def assert_converted(folder: Path, original: dict[str, bytes], plan: dict[str, Any]) -> None:
    for entry in plan["files"]:
        name = entry["name"]
        before = np.frombuffer(original[name], dtype="<f4")
        data = (folder / name).read_bytes()
        assert len(data) * 2 == len(original[name]), f"{name} not halved"
        after = np.frombuffer(data, dtype="<f2").astype(np.float32)
        # fp16 keeps 11 significant bits: relative error <= 2^-11 for normal values.
        np.testing.assert_allclose(after, before, rtol=2.0**-11, atol=2.0**-24)
    ini = (folder / "config.ini").read_text()
    assert "weight_data_type = fp16" in ini
    assert "weight_data_type = fp32" not in ini
    # Every other config line is kept.
    for line in original["config.ini"].decode().splitlines():
        if not line.startswith("weight_data_type"):
            assert line in ini.splitlines()
    assert siblings_left(folder) == []


def test_converts_in_place(tmp_path: Path) -> None:
    folder, expected, plan = make_gptj_folder(tmp_path)
    original = snapshot(folder)
    result = run(folder, "--expected", expected)
    assert result.returncode == 0, result.stderr
    assert "converted 31 weight files" in result.stdout
    assert_converted(folder, original, plan)
    verify = subprocess.run([sys.executable, str(CONVERT_SCRIPTS / "verify_weights.py"), str(folder), "--expected", str(expected)], capture_output=True, text=True)
    assert verify.returncode == 0 and "fp16" in verify.stdout


def test_second_run_is_a_no_op(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    assert run(folder, "--expected", expected).returncode == 0
    after_first = snapshot(folder)
    result = run(folder, "--expected", expected)
    assert result.returncode == 0
    assert "already fp16" in result.stdout
    assert snapshot(folder) == after_first


def test_partial_folder_is_refused_and_untouched(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    (folder / "model.layers.1.mlp.dense_4h_to_h.weight.0.bin").unlink()
    before = snapshot(folder)
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert "refusing a partial" in result.stderr
    assert "missing: model.layers.1.mlp.dense_4h_to_h.weight.0.bin" in result.stderr
    assert snapshot(folder) == before
    assert siblings_left(folder) == []


def test_truncated_file_is_refused(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    target = folder / "model.wte.bin"
    target.write_bytes(target.read_bytes()[:100])
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert "wrong size: model.wte.bin" in result.stderr


def test_overflowing_values_are_refused(tmp_path: Path) -> None:
    folder, expected, _ = make_gptj_folder(tmp_path)
    target = folder / "model.final_layernorm.weight.bin"
    values = np.fromfile(target, dtype="<f4")
    values[3] = 1e6
    values.tofile(target)
    before = snapshot(folder)
    result = run(folder, "--expected", expected)
    assert result.returncode == 1
    assert "overflow fp16" in result.stderr
    assert snapshot(folder) == before
    assert siblings_left(folder) == []


def test_crash_during_copy_leaves_original_and_rerun_converts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, expected_path, plan = make_gptj_folder(tmp_path)
    original = snapshot(folder)
    expected = to_fp16.load_expected(expected_path)
    real_convert = to_fp16._convert_file
    calls = {"n": 0}

    def crashing(src: Path, dst: Path) -> None:
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt("simulated kill mid-copy")
        real_convert(src, dst)

    monkeypatch.setattr(to_fp16, "_convert_file", crashing)
    with pytest.raises(KeyboardInterrupt):
        to_fp16.to_fp16(folder, expected)
    assert snapshot(folder) == original, "original folder must be untouched until the swap"
    assert siblings_left(folder) == [f".{folder.name}.fp16-tmp"]

    monkeypatch.setattr(to_fp16, "_convert_file", real_convert)
    assert to_fp16.main([str(folder), "--expected", str(expected_path)]) == 0
    assert_converted(folder, original, plan)


@pytest.mark.parametrize("crash_at", [1, 2, 3], ids=["before-ready", "after-ready", "mid-swap"])
def test_crash_during_swap_is_recovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_at: int) -> None:
    folder, expected_path, plan = make_gptj_folder(tmp_path)
    original = snapshot(folder)
    expected = to_fp16.load_expected(expected_path)
    real_rename = to_fp16._rename
    calls = {"n": 0}

    def crashing(src: Path, dst: Path) -> None:
        calls["n"] += 1
        if calls["n"] == crash_at:
            raise KeyboardInterrupt(f"simulated kill at rename {crash_at}")
        real_rename(src, dst)

    monkeypatch.setattr(to_fp16, "_rename", crashing)
    with pytest.raises(KeyboardInterrupt):
        to_fp16.to_fp16(folder, expected)
    # At every point the weights exist as a complete set somewhere.
    assert folder.exists() or (folder.parent / f".{folder.name}.fp16-ready").exists()

    monkeypatch.setattr(to_fp16, "_rename", real_rename)
    assert to_fp16.main([str(folder), "--expected", str(expected_path)]) == 0
    assert_converted(folder, original, plan)


def test_crash_after_swap_before_cleanup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, expected_path, plan = make_gptj_folder(tmp_path)
    original = snapshot(folder)
    expected = to_fp16.load_expected(expected_path)

    def crash(path: Any, *args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt("simulated kill before removing the fp32 copy")

    monkeypatch.setattr(to_fp16.shutil, "rmtree", crash)
    with pytest.raises(KeyboardInterrupt):
        to_fp16.to_fp16(folder, expected)
    monkeypatch.undo()
    assert siblings_left(folder) == [f".{folder.name}.fp32-old"]
    assert to_fp16.main([str(folder), "--expected", str(expected_path)]) == 0
    assert_converted(folder, original, plan)


def test_set_weight_data_type_adds_missing_key() -> None:
    text = "[gptj]\nhead_num = 4\n\n[other]\nweight_data_type = fp32\n"
    out = to_fp16.set_weight_data_type(text, "gptj", "fp16")
    assert out == "[gptj]\nweight_data_type = fp16\nhead_num = 4\n\n[other]\nweight_data_type = fp32\n"
