"""Counts passed/failed/skipped tests across JUnit XML and TAP reports.

usage: count_results.py <report-dir> [crashed-suite ...]
Prints one line per report, then the closing `N passed, N failed[, N skipped]`.
Exit 1 when anything failed or a suite crashed without a report.
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def junit(path: Path) -> tuple[int, int, int]:
    passed = failed = skipped = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def tap(path: Path) -> tuple[int, int, int]:
    passed = failed = skipped = 0
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("not ok"):
            failed += 1
        elif line.startswith("ok"):
            if "# skip" in line.lower():
                skipped += 1
            else:
                passed += 1
    return passed, failed, skipped


def main() -> int:
    report_dir = Path(sys.argv[1])
    crashed = sys.argv[2:]
    totals = [0, 0, 0]
    for path in sorted(report_dir.iterdir()):
        if path.suffix == ".xml":
            counts = junit(path)
        elif path.suffix == ".tap":
            counts = tap(path)
        else:
            continue
        print(f"  {path.name}: {counts[0]} passed, {counts[1]} failed, {counts[2]} skipped")
        totals = [a + b for a, b in zip(totals, counts)]
    for name in crashed:
        print(f"  {name}: crashed before writing a report (counted as 1 failure)")
        totals[1] += 1
    line = f"{totals[0]} passed, {totals[1]} failed"
    if totals[2]:
        line += f", {totals[2]} skipped"
    print(line)
    return 1 if totals[1] else 0


if __name__ == "__main__":
    sys.exit(main())
