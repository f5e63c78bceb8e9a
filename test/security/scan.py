"""Security scan of what every committed stack ships: checkov over the
Kubernetes manifests synth renders and over the Dockerfiles, hadolint over
the Dockerfiles. Writes one JUnit report (one test case per tool and target)
and exits 1 on any finding.

A finding is acceptable only as an inline skip that states its reason:
`#checkov:skip=<ID>:<reason>` / `checkov.io/skipN: <ID>=<reason>` for checkov,
and a `# hadolint ignore=<codes>` line directly under a comment line giving
the reason for hadolint. Skips without a reason are failures too.

Base images: every `FROM` of a project Dockerfile, with its ARG defaults
substituted, names an image by digest (`@sha256:<64 hex>`), an earlier stage,
or an ARG without a default (the pipeline passes a digest: the server image's
triton_with_ft base). A base left on a tag needs a `# base-image-tag: <reason>`
comment line directly above its FROM.

usage: scan.py --checkov BIN --hadolint BIN --report FILE --work DIR
               --stack NAME=SYNTH_DIR ... --dockerfile PATH ...
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

# Synth renders `<ecr-repo>:synth` where pulumi up deploys `<registry>/<repo>@sha256:<digest>`
# (infra/synth/k8sArtifacts.ts). The scan checks what is deployed, so it pins the
# placeholder to a digest-shaped reference in its scratch copy.
SYNTH_IMAGE = re.compile(r"(image:\s*)([a-z0-9][a-z0-9._/-]*):synth\b")
SCANNED_DIGEST = "sha256:" + "0" * 64
MIN_REASON = 15
NO_REASON = "No comment provided"


@dataclass
class Case:
    name: str
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def checkov(bin_: str, framework: str, args: list[str]) -> dict:
    proc = subprocess.run(
        [bin_, "--framework", framework, "-o", "json", "--skip-download", *args],
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"checkov exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    out = proc.stdout.strip()
    if not out:
        raise RuntimeError(f"checkov printed no report: {proc.stderr.strip()[-2000:]}")
    data = json.loads(out)
    reports = data if isinstance(data, list) else [data]
    merged: dict = {"passed_checks": [], "failed_checks": [], "skipped_checks": [], "parsing_errors": []}
    for r in reports:
        if "results" not in r:  # checkov's empty-scan shape: {"passed": 0, "failed": 0, ...}
            continue
        for k in merged:
            merged[k].extend(r["results"].get(k, []))
    return merged


def judge_checkov(case: Case, res: dict) -> None:
    for c in res["failed_checks"]:
        case.failures.append(f"{c['check_id']} {c['check_name']}: {c['resource']} ({c['file_path']})")
    for c in res["skipped_checks"]:
        reason = (c["check_result"].get("suppress_comment") or "").strip()
        if reason == NO_REASON or len(reason) < MIN_REASON:
            case.failures.append(f"{c['check_id']} skipped without a reason on {c['resource']}: add ':<why>' to the skip")
        else:
            case.notes.append(f"skipped {c['check_id']} on {c['resource']}: {reason}")
    for p in res["parsing_errors"]:
        case.failures.append(f"checkov could not parse {p}")
    case.notes.append(
        f"{len(res['passed_checks'])} passed, {len(res['failed_checks'])} failed, {len(res['skipped_checks'])} skipped"
    )


def hadolint_ignores_without_reason(dockerfile: Path) -> list[str]:
    lines = dockerfile.read_text().splitlines()
    bad = []
    for i, line in enumerate(lines):
        if re.match(r"\s*#\s*hadolint\s+ignore=", line):
            prev = lines[i - 1].strip() if i > 0 else ""
            if not prev.startswith("#") or len(prev.lstrip("# ")) < MIN_REASON or re.search(r"hadolint\s+ignore", prev):
                bad.append(f"{dockerfile}:{i + 1}: '{line.strip()}' needs a comment line above it giving the reason")
    return bad


def hadolint(bin_: str, case: Case, dockerfile: Path) -> None:
    proc = subprocess.run([bin_, "--format", "json", "--no-color", str(dockerfile)], capture_output=True, text=True)
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError as err:
        raise RuntimeError(f"hadolint output is not JSON ({err}): {proc.stdout[:500]} {proc.stderr[:500]}")
    for f in findings:
        case.failures.append(f"{f['code']} ({f['level']}) {f['file']}:{f['line']}: {f['message']}")
    case.failures.extend(hadolint_ignores_without_reason(dockerfile))
    case.notes.append(f"{len(findings)} findings")


DIGEST_REF = re.compile(r"@sha256:[0-9a-f]{64}$")
TAG_REASON = re.compile(r"#\s*base-image-tag:\s*(.+)$")


def base_images(case: Case, dockerfile: Path) -> None:
    """Each FROM resolves to a digest, a stage, or a pipeline-supplied ARG (module docstring)."""
    lines = dockerfile.read_text().splitlines()
    defaults: dict[str, str | None] = {}
    stages: set[str] = set()
    seen_from = False
    for i, raw in enumerate(lines):
        line = raw.strip()
        arg = re.match(r"ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?$", line)
        if arg and not seen_from:  # only ARGs before the first FROM are visible to FROM lines
            defaults[arg.group(1)] = arg.group(2)
            continue
        m = re.match(r"FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$", line, re.IGNORECASE)
        if not m:
            continue
        seen_from = True
        ref, stage = m.group(1), m.group(2)
        where = f"{dockerfile}:{i + 1}"
        if ref in stages:
            pass
        else:
            unset = [n for n in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", ref) if defaults.get(n) is None]
            resolved = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda v: defaults.get(v.group(1)) or "", ref)
            reason = TAG_REASON.search(lines[i - 1].strip()) if i > 0 else None
            if unset and resolved == "":
                case.notes.append(f"{where}: FROM {ref}: ARG {', '.join(unset)} has no default; the pipeline passes it")
            elif DIGEST_REF.search(resolved):
                case.notes.append(f"{where}: FROM {resolved}")
            elif reason and len(reason.group(1).strip()) >= MIN_REASON:
                case.notes.append(f"{where}: FROM {resolved} by tag: {reason.group(1).strip()}")
            else:
                case.failures.append(
                    f"{where}: FROM {ref} resolves to {resolved or '(empty)'}, not pinned by digest: "
                    "use <image>:<tag>@sha256:<digest>, or give the reason on a '# base-image-tag: <why>' line above"
                )
        if stage:
            stages.add(stage)
    case.notes.append(f"{len(stages)} named stages")


def timed(case: Case, fn) -> Case:
    start = time.monotonic()
    try:
        fn()
    except Exception as err:  # a tool that crashes is a failed case, not a crashed suite
        case.failures.append(f"scan error: {err}")
    case.seconds = time.monotonic() - start
    return case


def write_junit(cases: list[Case], path: Path) -> None:
    suite = ET.Element(
        "testsuite",
        name="security",
        tests=str(len(cases)),
        failures=str(sum(1 for c in cases if c.failures)),
    )
    for c in cases:
        tc = ET.SubElement(suite, "testcase", classname="security", name=c.name, time=f"{c.seconds:.2f}")
        if c.failures:
            ET.SubElement(tc, "failure", message=f"{len(c.failures)} finding(s)").text = "\n".join(c.failures)
        ET.SubElement(tc, "system-out").text = "\n".join(c.notes)
    path.parent.mkdir(parents=True, exist_ok=True)
    root = ET.Element("testsuites", name="security")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkov", required=True)
    ap.add_argument("--hadolint", required=True)
    ap.add_argument("--report", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--stack", action="append", default=[], help="NAME=SYNTH_OUT_DIR")
    ap.add_argument("--dockerfile", action="append", default=[], type=Path)
    a = ap.parse_args()

    cases: list[Case] = []
    dockerfiles: list[tuple[str, Path]] = [(str(p), p) for p in a.dockerfile]
    for spec in a.stack:
        name, _, synth = spec.partition("=")
        synth_dir = Path(synth)
        k8s = a.work / name / "k8s"
        shutil.rmtree(k8s, ignore_errors=True)
        k8s.mkdir(parents=True)
        for f in sorted((synth_dir / "k8s").glob("*.yaml")):
            (k8s / f.name).write_text(SYNTH_IMAGE.sub(rf"\g<1>\g<2>@{SCANNED_DIGEST}", f.read_text()))
        case = Case(f"checkov kubernetes: stack {name} manifests")
        cases.append(timed(case, lambda c=case, d=k8s: judge_checkov(c, checkov(a.checkov, "kubernetes", ["-d", str(d)]))))
        for df in sorted(synth_dir.glob("images/**/Dockerfile")):
            dockerfiles.append((f"stack {name} {df.relative_to(synth_dir)}", df))

    for label, df in dockerfiles:
        c1 = Case(f"checkov dockerfile: {label}")
        cases.append(timed(c1, lambda c=c1, d=df: judge_checkov(c, checkov(a.checkov, "dockerfile", ["-f", str(d)]))))
        c2 = Case(f"hadolint: {label}")
        cases.append(timed(c2, lambda c=c2, d=df: hadolint(a.hadolint, c, d)))
        c3 = Case(f"base images by digest: {label}")
        cases.append(timed(c3, lambda c=c3, d=df: base_images(c, d)))

    write_junit(cases, a.report)
    failed = [c for c in cases if c.failures]
    for c in cases:
        status = "FAIL" if c.failures else "ok"
        print(f"{status:4} {c.name} ({'; '.join(c.notes[-1:])})")
        for f in c.failures:
            print(f"       {f}")
        for n in c.notes[:-1]:
            print(f"       {n}")
    findings = sum(len(c.failures) for c in cases)
    print(f"security: {len(cases) - len(failed)} passed, {len(failed)} failed ({findings} findings)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
