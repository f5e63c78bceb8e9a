#!/usr/bin/env bash
# Runs the Python test suites, each in its cached venv (test/lib/pyenv.sh):
#   light: everything under test/python except torch_tests/ (requirements.lock, no torch)
#   torch: test/python/torch_tests (requirements-torch.lock; the PyPI torch wheel pulls
#          GBs of CUDA libraries, so that venv is built once and reused by its lock hash)
#   lint:  ruff and mypy with pyproject.toml's settings (requirements-lint.lock): ruff over
#          the server image's Python, scripts/convert and these tests; mypy --strict over
#          images/server/python/tritonft and scripts/convert
# Both converter locks come from images/triton_with_ft/lock.sh: a package the image also
# installs has the image's version (test_requirement_locks.py checks it).
# usage: test/python/run.sh [all|light|torch|lint] [extra pytest args...]
# With TEST_REPORT_DIR set, writes $TEST_REPORT_DIR/python-<suite>.xml (JUnit; the
# lint suite as one test per tool).
# Exits non-zero if any test failed or a suite could not run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
suite=${1:-all}
[[ $# -gt 0 ]] && shift

log() { printf '%s [test/python] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }

case $suite in
  all | light | torch | lint) ;;
  *) echo "usage: $0 [all|light|torch|lint] [pytest args...]" >&2; exit 2 ;;
esac

# The image's minor, 3.10, where one is at hand (test/lib/python310.sh says why).
# shellcheck source=test/lib/python310.sh
source "$repo/test/lib/python310.sh"
if [[ -z ${PYTHON:-} ]]; then
  if PYTHON=$(find_python310); then
    log "python: $PYTHON (the image's minor, 3.10)"
  else
    PYTHON=python3
    log "python: no Python 3.10 here; using $("$PYTHON" -c 'import sys; print(sys.version.split()[0])') (the image runs 3.10)"
  fi
fi
export PYTHON

# Keep the work tree free of __pycache__ and make sure nothing reaches the Hub.
export PYTHONDONTWRITEBYTECODE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1

run_suite() {
  local name=$1 lock=$2
  shift 2
  local started venv rc=0
  started=$(date +%s)
  log "$name: preparing venv from ${lock#"$repo"/}"
  venv=$("$repo/test/lib/pyenv.sh" "$lock")
  log "$name: venv ready in $(($(date +%s) - started))s: $venv"
  local report=()
  if [[ -n ${TEST_REPORT_DIR:-} ]]; then
    mkdir -p "$TEST_REPORT_DIR"
    report=(--junitxml="$TEST_REPORT_DIR/python-$name.xml")
  fi
  log "$name: running pytest"
  (cd "$here" && "$venv/bin/python" -m pytest -p no:cacheprovider "${report[@]}" "$@") || rc=$?
  log "$name: pytest exited $rc after $(($(date +%s) - started))s"
  return "$rc"
}

# run_lint : ruff, then mypy, from the repository root (they read pyproject.toml
# there); each tool is one test case of the JUnit report, its output the failure text.
run_lint() {
  local venv tool rc failures=0 cases="" out
  venv=$("$repo/test/lib/pyenv.sh" "$here/requirements-lint.lock")
  for tool in ruff mypy; do
    rc=0
    if [[ $tool == ruff ]]; then
      out=$(cd "$repo" && "$venv/bin/ruff" check --no-cache --output-format concise 2>&1) || rc=$?
    else
      out=$(cd "$repo" && "$venv/bin/mypy" --no-incremental 2>&1) || rc=$?
    fi
    printf '%s\n' "$out" >&2
    log "lint: $tool exited $rc"
    if ((rc == 0)); then
      cases+="<testcase classname=\"lint\" name=\"$tool\"/>"
    else
      failures=$((failures + 1))
      cases+="<testcase classname=\"lint\" name=\"$tool\"><failure message=\"$tool exited $rc\"><![CDATA[${out//]]>/]] >}]]></failure></testcase>"
    fi
  done
  if [[ -n ${TEST_REPORT_DIR:-} ]]; then
    mkdir -p "$TEST_REPORT_DIR"
    printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="python-lint" tests="2" failures="%d">%s</testsuite>\n' \
      "$failures" "$cases" >"$TEST_REPORT_DIR/python-lint.xml"
  fi
  ((failures == 0))
}

status=0
if [[ $suite == all || $suite == lint ]]; then
  run_lint || status=1
fi
if [[ $suite == all || $suite == light ]]; then
  run_suite light "$here/requirements.lock" "$here" --ignore="$here/torch_tests" "$@" || status=1
fi
if [[ $suite == all || $suite == torch ]]; then
  run_suite torch "$here/requirements-torch.lock" "$here/torch_tests" "$@" || status=1
fi
if [[ $status -ne 0 ]]; then
  log "FAILED: at least one Python suite failed"
else
  log "all Python suites passed"
fi
exit "$status"
