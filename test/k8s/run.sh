#!/usr/bin/env bash
# Real control-plane suite, one entry point for CI and developers:
#   1. build (or reuse from ~/.cache/triton-ft) kube-apiserver, controller-manager,
#      scheduler, kubectl at the patch pinned for the stack's default EKS minor,
#      etcd and kwok (test/k8s/build-control-plane.sh);
#   2. vitest: start etcd + the control plane + kwok on 127.0.0.1, apply every
#      stack's synth-rendered manifests to GPU-shaped fake nodes, and stop
#      every process it started.
# With TEST_REPORT_DIR set, the JUnit report goes to k8s.xml there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
log() { printf '%s [k8s-suite] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

start=$SECONDS
minor=$(npx --no-install tsx test/k8s/k8s-minor.ts)
log "phase: control-plane binaries for Kubernetes $minor"
bin=$(bash test/k8s/build-control-plane.sh "$minor" | tail -n 1)
version=$("$bin/kube-apiserver" --version | awk '{print $2}')
log "binaries ready in $((SECONDS - start))s: $version in $bin"

work=$(mktemp -d "${TMPDIR:-/tmp}/triton-ft-k8s-XXXXXX")
# The vitest globalSetup stops what it starts; should the runner itself be
# killed, stop the processes it recorded (by pid) and nothing else.
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

vitest_args=(run --config test/k8s/vitest.config.mts --reporter=default)
if [[ -n ${TEST_REPORT_DIR:-} ]]; then
  mkdir -p "$TEST_REPORT_DIR"
  vitest_args+=(--reporter=junit --outputFile.junit="$TEST_REPORT_DIR/k8s.xml")
fi

phase=$SECONDS
status=0
K8S_BIN_DIR=$bin K8S_VERSION=$version K8S_WORK_DIR=$work K8S_KEEP_WORK_DIR=1 \
  npx --no-install vitest "${vitest_args[@]}" || status=$?
log "vitest finished in $((SECONDS - phase))s (status $status)"
if [[ $status -ne 0 && -n ${TEST_REPORT_DIR:-} ]]; then
  # A failure in globalSetup (the control plane did not start) leaves a report
  # without failed test cases: record it as one failure so the closing
  # `N passed, N failed` line cannot read green.
  python3 test/lib/junit_setup_failure.py "$TEST_REPORT_DIR/k8s.xml" "$TEST_REPORT_DIR/k8s-setup.xml" \
    "test/k8s" "control-plane suite setup (see the [k8s-setup] lines above)"
fi
log "done in $((SECONDS - start))s, status $status"
exit "$status"
