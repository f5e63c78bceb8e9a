"""Checks every workflow under .github/workflows and writes a JUnit report.

Per workflow file: actionlint (shellcheck wired in for `run:` scripts) is
clean; every `uses:` of a remote action is pinned to a full commit SHA with
the version in a comment (`owner/repo@<40 hex> # v1.2.3`). One more case
runs actionlint on a deliberately broken fixture and requires both an
actionlint finding and a shellcheck finding, so a linter that silently does
nothing turns the suite red.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<rest>.*)$")
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"#\s*v\d+(\.\d+){0,2}\b")


def actionlint(binary: str, shellcheck: str, path: Path, cwd: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [binary, "-no-color", "-shellcheck", shellcheck, str(path)],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def pin_problems(path: Path) -> list[str]:
    problems = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = USES.match(line)
        if not m:
            continue
        ref = m.group("ref").strip("'\"")
        if ref.startswith("./") or ref.startswith("docker://"):
            continue
        if not PINNED.match(ref):
            problems.append(f"{path.name}:{n}: {ref} is not pinned to a full commit SHA")
        elif not VERSION_COMMENT.search(m.group("rest")):
            problems.append(f"{path.name}:{n}: {ref} lacks its version in a comment (`# vX.Y.Z`)")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--actionlint", required=True)
    ap.add_argument("--shellcheck", required=True)
    ap.add_argument("--junit", required=True)
    a = ap.parse_args()
    root = Path(a.root)
    here = Path(__file__).resolve().parent

    cases: list[tuple[str, float, str | None]] = []  # name, seconds, failure text

    def case(name: str, fn) -> None:
        start = time.monotonic()
        try:
            failure = fn()
        except Exception as err:  # a crashed check is a failed check
            failure = f"{type(err).__name__}: {err}"
        cases.append((name, time.monotonic() - start, failure))
        print(("ok     " if failure is None else "FAILED ") + name + ("" if failure is None else "\n" + failure))

    workflows = sorted((root / ".github" / "workflows").glob("*.y*ml"))

    def some_workflows():
        return None if workflows else "no workflow files under .github/workflows"

    case("workflows exist", some_workflows)
    for wf in workflows:
        def lint(wf=wf):
            code, out = actionlint(a.actionlint, a.shellcheck, wf, root)
            return None if code == 0 else out or f"actionlint exited {code}"

        def pins(wf=wf):
            problems = pin_problems(wf)
            return "\n".join(problems) if problems else None

        case(f"actionlint {wf.relative_to(root)}", lint)
        case(f"actions pinned by SHA in {wf.relative_to(root)}", pins)

    def self_test():
        code, out = actionlint(a.actionlint, a.shellcheck, here / "fixtures" / "broken.yml", here)
        missing = []
        if code == 0:
            missing.append("actionlint passed a broken workflow")
        if "steps.nope" not in out and "property \"nope\"" not in out:
            missing.append("no actionlint finding for the undefined step output")
        if "shellcheck reported issue" not in out:
            missing.append("no shellcheck finding (is shellcheck wired into actionlint?)")
        return ("\n".join(missing) + "\n--- actionlint output ---\n" + out) if missing else None

    case("self-test: actionlint and shellcheck catch a broken workflow", self_test)

    suite = ET.Element("testsuite", name="workflows", tests=str(len(cases)),
                       failures=str(sum(1 for c in cases if c[2] is not None)))
    for name, secs, failure in cases:
        tc = ET.SubElement(suite, "testcase", classname="workflows", name=name, time=f"{secs:.3f}")
        if failure is not None:
            ET.SubElement(tc, "failure", message=failure.splitlines()[0][:200]).text = failure
    Path(a.junit).parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(a.junit, encoding="utf-8", xml_declaration=True)
    failed = sum(1 for c in cases if c[2] is not None)
    print(f"workflows: {len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
