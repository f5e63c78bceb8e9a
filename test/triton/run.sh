#!/usr/bin/env bash
# Real-server suite (issue 7), one entry point for CI and for developers:
#   1. pytest: every config.pbtxt synth renders, for every catalog preset,
#      parsed with Triton's own schema (tritonclient model_config_pb2), and the
#      ensemble wiring checked statically;
#   2. vitest: synth's repository for test/triton/Pulumi.triton-test.yaml with
#      the FT stand-in, served by a real tritonserver (nvidia-pytriton), driven
#      through the project's TypeScript client and `npm run smoke`.
# Both always run; the exit status is non-zero if either fails. With
# TEST_REPORT_DIR set, JUnit reports go to triton-pytest.xml and
# triton-vitest.xml there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

log() { printf '%s [triton-suite] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

start=$SECONDS
log "phase: python environment (test/triton/requirements.lock)"
venv=$(test/lib/pyenv.sh test/triton/requirements.lock)
log "venv ready in $((SECONDS - start))s: $venv"

pytest_args=(-q -p no:cacheprovider test/triton/test_pbtxt_schema.py)
vitest_args=(run --config test/triton/vitest.config.mts --reporter=default)
if [[ -n ${TEST_REPORT_DIR:-} ]]; then
  mkdir -p "$TEST_REPORT_DIR"
  pytest_args+=(--junitxml="$TEST_REPORT_DIR/triton-pytest.xml")
  vitest_args+=(--reporter=junit --outputFile.junit="$TEST_REPORT_DIR/triton-vitest.xml")
fi

status=0
phase=$SECONDS
log "phase: pbtxt schema (pytest)"
"$venv/bin/python" -m pytest "${pytest_args[@]}" || status=1
log "pytest finished in $((SECONDS - phase))s"

phase=$SECONDS
log "phase: real tritonserver integration (vitest)"
npx --no-install vitest "${vitest_args[@]}" || status=1
log "vitest finished in $((SECONDS - phase))s"

log "done in $((SECONDS - start))s, status $status"
exit "$status"
