#!/usr/bin/env bash
# The shared runner of the suites that start servers (test/k8s, test/engine,
# test/ssh): sourced by each suite's run.sh, which adds only its own steps.
#   suite_init <name>                    cd to the repository root; `log` prefixes [<name>-suite]
#   suite_workdir <name>                 a private work folder (in $SUITE_WORK), removed on exit, and
#                                        every process the suite recorded in it (<pid> <name> lines
#                                        in $SUITE_WORK/pids) stopped by pid: nothing else is touched
#   suite_vitest <name> <what> [VAR=value ...]
#                                        vitest with test/<name>/vitest.config.mts and the variables
#                                        given; with TEST_REPORT_DIR, JUnit to <name>.xml there, and a
#                                        failure before any test case (a server did not start)
#                                        recorded as one failed case, described by <what>, so the
#                                        closing `N passed, N failed` line cannot read green
# Sourced, not run: it sets no shell options of its own (each run.sh sets -euo pipefail).

suite_init() {
  SUITE_NAME=$1
  SUITE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  SUITE_START=$SECONDS
  cd "$SUITE_ROOT" || exit 2
}

log() { printf '%s [%s-suite] %s\n' "$(date -u +%H:%M:%S)" "${SUITE_NAME:-test}" "$*" >&2; }

# shellcheck disable=SC2317 # invoked by the EXIT trap
suite_cleanup() {
  if [[ -n ${SUITE_WORK:-} && -f $SUITE_WORK/pids ]]; then
    while read -r pid name; do
      if kill -0 "$pid" 2>/dev/null; then
        log "stopping leftover $name (pid $pid)"
        kill "$pid" 2>/dev/null || true
        sleep 2
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done <"$SUITE_WORK/pids"
  fi
  if [[ -n ${SUITE_WORK:-} ]]; then rm -rf "$SUITE_WORK"; fi
}

suite_workdir() {
  SUITE_WORK=$(mktemp -d "${TMPDIR:-/tmp}/triton-ft-$1-XXXXXX")
  # The vitest globalSetup stops what it starts; should the runner itself be
  # killed, stop the processes it recorded (by pid) and nothing else.
  trap suite_cleanup EXIT
}

suite_vitest() {
  local name=$1 what=$2
  shift 2
  local args=(run --config "test/$name/vitest.config.mts" --reporter=default)
  if [[ -n ${TEST_REPORT_DIR:-} ]]; then
    mkdir -p "$TEST_REPORT_DIR"
    args+=(--reporter=junit --outputFile.junit="$TEST_REPORT_DIR/$name.xml")
  fi
  local phase=$SECONDS status=0
  env "$@" npx --no-install vitest "${args[@]}" || status=$?
  log "vitest finished in $((SECONDS - phase))s (status $status)"
  if [[ $status -ne 0 && -n ${TEST_REPORT_DIR:-} ]]; then
    python3 test/lib/junit_setup_failure.py "$TEST_REPORT_DIR/$name.xml" "$TEST_REPORT_DIR/$name-setup.xml" \
      "test/$name" "$what"
  fi
  log "done in $((SECONDS - SUITE_START))s, status $status"
  return "$status"
}
