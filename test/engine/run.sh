#!/usr/bin/env bash
# Real Pulumi engine suite, one entry point for CI and developers:
#   1. build (or reuse from ~/.cache/triton-ft) the Pulumi CLI and the
#      Kubernetes provider (test/engine/build-engine.sh), and the control
#      plane with kwok (test/k8s/build-control-plane.sh, shared with the k8s suite);
#   2. vitest: start the control plane on 127.0.0.1, run the real program()
#      in a promoted kubeconfig-mode stack through the Automation API
#      (preview, up, updates, refresh, policy, destroy), and stop every
#      process it started.
# With TEST_REPORT_DIR set, the JUnit report goes to engine.xml there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
log() { printf '%s [engine-suite] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

start=$SECONDS
minor=$(npx --no-install tsx test/k8s/k8s-minor.ts)
log "phase: control-plane binaries for Kubernetes $minor, Pulumi CLI and Kubernetes provider"
k8s_bin=$(bash test/k8s/build-control-plane.sh "$minor" | tail -n 1)
engine_bin=$(bash test/engine/build-engine.sh | tail -n 1)
version=$("$k8s_bin/kube-apiserver" --version | awk '{print $2}')
log "binaries ready in $((SECONDS - start))s: $version in $k8s_bin; $("$engine_bin/pulumi" version) in $engine_bin"

work=$(mktemp -d "${TMPDIR:-/tmp}/triton-ft-engine-XXXXXX")
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  if [[ -f $work/pids ]]; then
    while read -r pid name; do
      if kill -0 "$pid" 2>/dev/null; then
        log "stopping leftover $name (pid $pid)"
        kill "$pid" 2>/dev/null || true
        sleep 2
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done <"$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

vitest_args=(run --config test/engine/vitest.config.mts --reporter=default)
if [[ -n ${TEST_REPORT_DIR:-} ]]; then
  mkdir -p "$TEST_REPORT_DIR"
  vitest_args+=(--reporter=junit --outputFile.junit="$TEST_REPORT_DIR/engine.xml")
fi

phase=$SECONDS
status=0
K8S_BIN_DIR=$k8s_bin K8S_VERSION=$version K8S_WORK_DIR=$work K8S_KEEP_WORK_DIR=1 ENGINE_BIN_DIR=$engine_bin \
  npx --no-install vitest "${vitest_args[@]}" || status=$?
log "vitest finished in $((SECONDS - phase))s (status $status)"
if [[ $status -ne 0 && -n ${TEST_REPORT_DIR:-} ]]; then
  # A failure in globalSetup leaves a report without failed test cases: count it as one failure.
  python3 test/lib/junit_setup_failure.py "$TEST_REPORT_DIR/engine.xml" "$TEST_REPORT_DIR/engine-setup.xml" \
    "test/engine" "engine suite setup (see the [k8s-setup] and [engine-suite] lines above)"
fi
log "done in $((SECONDS - start))s, status $status"
exit "$status"
