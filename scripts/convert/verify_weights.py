#!/usr/bin/env python3
"""Check a converted FT folder (`<N>-gpu/`) against the conversion plan's expected weights.

FT only warns when a weight file is missing and then serves garbage, so this
gate runs before any image bake.

  verify_weights.py FOLDER --expected expected-weights.json

expected-weights.json (written by the TypeScript conversion plan):
  {"family": "gptj", "tensorParallel": 2, "section": "gptj",
   "config": {"head_num": "16", "size_per_head": "256", ...},   # string values expected in config.ini
   "files": [{"name": "model.wte.bin", "elements": 12345}, ...]} # config.ini itself is not listed

Expected byte size of a file = elements x (2 if config.ini's weight_data_type is
fp16, else 4). Every missing file, wrong size and config.ini mismatch is listed;
files not in the plan only produce a warning.
Exit codes: 0 complete, 1 problems found, 2 bad arguments or unreadable expected JSON.
No third-party imports: runs anywhere with Python 3.9+.
"""

from __future__ import annotations

import argparse
import configparser
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BYTES_PER_ELEMENT = {"fp32": 4, "fp16": 2}


class ExpectedError(ValueError):
    """The expected-weights JSON is malformed."""


@dataclass(frozen=True)
class ExpectedFile:
    name: str
    elements: int


@dataclass(frozen=True)
class Expected:
    family: str
    tensor_parallel: int
    section: str
    config: dict[str, str]
    files: list[ExpectedFile]


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    data_type: str | None = None
    total_bytes: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def parse_expected(raw: Any) -> Expected:
    if not isinstance(raw, dict):
        raise ExpectedError("top level must be an object")
    family, tp, section, config, files = (raw.get(k) for k in ("family", "tensorParallel", "section", "config", "files"))
    if not isinstance(family, str) or not family:
        raise ExpectedError("'family' must be a non-empty string")
    if not isinstance(tp, int) or isinstance(tp, bool) or tp < 1:
        raise ExpectedError("'tensorParallel' must be an integer >= 1")
    if not isinstance(section, str) or not section:
        raise ExpectedError("'section' must be a non-empty string")
    if not isinstance(config, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in config.items()):
        raise ExpectedError("'config' must be an object of string values")
    if not isinstance(files, list) or not files:
        raise ExpectedError("'files' must be a non-empty list")
    parsed: list[ExpectedFile] = []
    seen: set[str] = set()
    for index, entry in enumerate(files):
        name = entry.get("name") if isinstance(entry, dict) else None
        elements = entry.get("elements") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or "/" in name or name == "config.ini":
            raise ExpectedError(f"files[{index}].name must be a plain file name other than config.ini")
        if not isinstance(elements, int) or isinstance(elements, bool) or elements < 1:
            raise ExpectedError(f"files[{index}] ({name}): 'elements' must be an integer >= 1")
        if name in seen:
            raise ExpectedError(f"files[{index}]: duplicate name {name}")
        seen.add(name)
        parsed.append(ExpectedFile(name, elements))
    return Expected(family, tp, section, dict(config), parsed)


def load_expected(path: Path) -> Expected:
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ExpectedError(f"cannot read {path}: {err}") from None
    return parse_expected(raw)


def read_config_ini(folder: Path, section: str, report: Report) -> dict[str, str] | None:
    path = folder / "config.ini"
    if not path.is_file():
        report.problems.append("config.ini: missing (FT refuses to load the model without it)")
        return None
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
    except configparser.Error as err:
        report.problems.append(f"config.ini: unreadable ({err})")
        return None
    if not parser.has_section(section):
        report.problems.append(f"config.ini: no [{section}] section (has: {', '.join(parser.sections()) or 'none'})")
        return None
    return dict(parser.items(section))


def verify(folder: Path, expected: Expected, data_type: str | None = None) -> Report:
    """Check `folder`; `data_type` forces the element size instead of reading config.ini's."""
    report = Report()
    if not folder.is_dir():
        report.problems.append(f"{folder}: not a directory")
        return report
    if folder.name != f"{expected.tensor_parallel}-gpu":
        report.warnings.append(f"folder is named {folder.name!r}, FT converters name it '{expected.tensor_parallel}-gpu'")

    ini = read_config_ini(folder, expected.section, report)
    if ini is not None:
        for key, want in sorted(expected.config.items()):
            got = ini.get(key)
            if got is None:
                report.problems.append(f"config.ini: [{expected.section}] {key} is missing, expected {want!r}")
            elif got.strip() != want:
                report.problems.append(f"config.ini: [{expected.section}] {key} = {got.strip()!r}, expected {want!r}")
    declared = (ini or {}).get("weight_data_type", "fp32").strip()
    dtype = data_type or declared
    if dtype not in BYTES_PER_ELEMENT:
        report.problems.append(f"config.ini: weight_data_type {dtype!r} is not one of {', '.join(BYTES_PER_ELEMENT)}")
        return report
    report.data_type = dtype
    width = BYTES_PER_ELEMENT[dtype]

    for entry in expected.files:
        path = folder / entry.name
        want_bytes = entry.elements * width
        if not path.is_file():
            report.problems.append(f"missing: {entry.name} (expected {want_bytes} bytes)")
            continue
        size = path.stat().st_size
        report.total_bytes += size
        if size != want_bytes:
            report.problems.append(
                f"wrong size: {entry.name} is {size} bytes, expected {want_bytes} ({entry.elements} elements x {width} bytes, {dtype})"
            )
    known = {f.name for f in expected.files} | {"config.ini"}
    for path in sorted(folder.iterdir()):
        if path.name not in known:
            report.warnings.append(f"unexpected file not in the plan: {path.name}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Verify a converted FT weight folder (<N>-gpu/) against the expected file list, sizes and config.ini values.",
    )
    parser.add_argument("folder", type=Path, help="the converted <N>-gpu folder holding config.ini and model.*.bin")
    parser.add_argument("--expected", required=True, type=Path, help="expected-weights JSON from the conversion plan")
    args = parser.parse_args(argv)
    try:
        expected = load_expected(args.expected)
    except ExpectedError as err:
        print(f"verify_weights: bad expected-weights file: {err}", file=sys.stderr)
        return 2
    report = verify(args.folder, expected)
    for warning in report.warnings:
        print(f"verify_weights: warning: {warning}", file=sys.stderr)
    if not report.ok:
        print(f"verify_weights: {args.folder} FAILED with {len(report.problems)} problem(s):", file=sys.stderr)
        for problem in report.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    print(
        f"verify_weights: {args.folder} OK: {len(expected.files)} weight files, {report.total_bytes} bytes,"
        f" {report.data_type}, [{expected.section}] matches {len(expected.config)} config keys"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
