#!/usr/bin/env python3
"""Rewrite a converted FT folder (`<N>-gpu/`) from fp32 to fp16 weight files, in place and safely.

FT's GPT-J converters always write fp32, which doubles the baked image. FT reads
the weight files as raw little-endian arrays of `weight_data_type` (config.ini),
so halving them means rewriting every model.*.bin and that one key.

  to_fp16.py FOLDER --expected expected-weights.json

Safety:
- refuses a partial folder: it must first pass verify_weights against the plan;
- writes the fp16 copy into a temp sibling (.<name>.fp16-tmp), reads every file
  back, verifies the copy against the plan, then marks it ready by renaming it
  (.<name>.fp16-ready) and swaps it with the original by renames;
- a rerun after an interruption at any point finishes or restarts cleanly;
- idempotent: a folder already at fp16 (and complete) is left as it is.
Exit codes: 0 done or already fp16, 1 refused/failed, 2 bad arguments.
Needs numpy; no network.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np

from verify_weights import Expected, ExpectedError, load_expected, verify

FP16_MAX = float(np.finfo(np.float16).max)


class Refused(RuntimeError):
    """The folder is not in a state this script may touch."""


def log(message: str) -> None:
    print(f"to_fp16: {message}", flush=True)


def _rename(src: Path, dst: Path) -> None:
    # One place for every rename so that tests can interrupt the swap.
    os.rename(src, dst)


def siblings(folder: Path) -> tuple[Path, Path, Path]:
    parent, name = folder.parent, folder.name
    return parent / f".{name}.fp16-tmp", parent / f".{name}.fp16-ready", parent / f".{name}.fp32-old"


def set_weight_data_type(text: str, section: str, value: str) -> str:
    """Set `weight_data_type` in [section] of an ini text, keeping every other line as is."""
    lines = text.splitlines(keepends=True)
    current = None
    section_line = None
    for index, line in enumerate(lines):
        header = re.match(r"\s*\[([^\]]+)\]\s*$", line)
        if header:
            current = header.group(1).strip()
            if current == section:
                section_line = index
            continue
        if current == section and re.match(r"\s*weight_data_type\s*[=:]", line):
            lines[index] = f"weight_data_type = {value}\n"
            return "".join(lines)
    if section_line is None:
        raise Refused(f"config.ini has no [{section}] section")
    lines.insert(section_line + 1, f"weight_data_type = {value}\n")
    return "".join(lines)


def _convert_file(src: Path, dst: Path) -> None:
    size = src.stat().st_size
    if size % 4:
        raise Refused(f"{src.name}: {size} bytes is not a whole number of fp32 values")
    values = np.fromfile(src, dtype="<f4")
    finite = values[np.isfinite(values)]
    if finite.size and float(np.abs(finite).max()) > FP16_MAX:
        raise Refused(f"{src.name}: values up to {float(np.abs(finite).max()):g} overflow fp16 (max {FP16_MAX:g})")
    half = values.astype("<f2")
    half.tofile(dst)
    # Read back: a short write or a full disk must not reach the swap.
    if not np.array_equal(np.fromfile(dst, dtype="<f2").view(np.uint16), half.view(np.uint16)):
        raise Refused(f"{dst.name}: read-back differs from what was written")


def build_fp16_copy(folder: Path, tmp: Path, expected: Expected) -> None:
    tmp.mkdir()
    for path in sorted(folder.iterdir()):
        if path.is_dir():
            raise Refused(f"unexpected sub-directory {path.name} in {folder}")
        if path.name == "config.ini":
            text = set_weight_data_type(path.read_text(), expected.section, "fp16")
            (tmp / "config.ini").write_text(text)
        elif path.suffix == ".bin":
            _convert_file(path, tmp / path.name)
        else:
            shutil.copy2(path, tmp / path.name)
    report = verify(tmp, expected)
    if not report.ok or report.data_type != "fp16":
        raise Refused("the fp16 copy failed verification: " + "; ".join(report.problems or [f"data type {report.data_type}"]))


def recover(folder: Path, expected: Expected) -> bool:
    """Finish or clean up an interrupted earlier run. Returns True when it completed the swap."""
    tmp, ready, old = siblings(folder)
    if tmp.exists():
        log(f"removing unfinished copy {tmp.name} from an interrupted run")
        shutil.rmtree(tmp)
    if ready.exists():
        report = verify(ready, expected)
        if not (report.ok and report.data_type == "fp16"):
            log(f"discarding {ready.name}: it no longer verifies")
            shutil.rmtree(ready)
        else:
            if folder.exists():
                if old.exists():
                    raise Refused(f"both {old.name} and {folder.name} exist next to {ready.name}; resolve by hand")
                _rename(folder, old)
            log(f"completing the swap of an interrupted run ({ready.name} -> {folder.name})")
            _rename(ready, folder)
            shutil.rmtree(old, ignore_errors=True)
            return True
    if old.exists():
        if not folder.exists():
            log(f"restoring {folder.name} from {old.name}")
            _rename(old, folder)
        else:
            report = verify(folder, expected)
            if not (report.ok and report.data_type == "fp16"):
                raise Refused(f"{old.name} exists but {folder.name} is not a complete fp16 folder; resolve by hand")
            shutil.rmtree(old)
    return False


def to_fp16(folder: Path, expected: Expected) -> str:
    folder = folder.absolute()
    if recover(folder, expected):
        return "completed an interrupted conversion"
    if not folder.is_dir():
        raise Refused(f"{folder} is not a directory")
    report = verify(folder, expected)
    if report.data_type == "fp16":
        if report.ok:
            return "already fp16, nothing to do"
        raise Refused("folder says fp16 but is incomplete: " + "; ".join(report.problems))
    if not report.ok:
        raise Refused("refusing a partial or mismatched folder:\n  - " + "\n  - ".join(report.problems))
    if report.data_type != "fp32":
        raise Refused(f"weight_data_type is {report.data_type}, only fp32 folders are converted")

    tmp, ready, old = siblings(folder)
    try:
        build_fp16_copy(folder, tmp, expected)
    except (Refused, OSError):
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _rename(tmp, ready)
    _rename(folder, old)
    _rename(ready, folder)
    shutil.rmtree(old)
    return f"converted {len(expected.files)} weight files to fp16 ({report.total_bytes} -> {report.total_bytes // 2} bytes)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Rewrite a converted FT <N>-gpu folder's weights to fp16 in place (verify, temp copy, atomic swap).",
    )
    parser.add_argument("folder", type=Path, help="the converted <N>-gpu folder (config.ini + model.*.bin)")
    parser.add_argument("--expected", required=True, type=Path, help="expected-weights JSON from the conversion plan (same file verify_weights.py reads)")
    args = parser.parse_args(argv)
    try:
        expected = load_expected(args.expected)
    except ExpectedError as err:
        print(f"to_fp16: bad expected-weights file: {err}", file=sys.stderr)
        return 2
    try:
        outcome = to_fp16(args.folder, expected)
    except (Refused, OSError) as err:
        print(f"to_fp16: {err}", file=sys.stderr)
        return 1
    log(f"{args.folder}: {outcome}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
