#!/usr/bin/env bash
# Real control-plane suite, one entry point for CI and developers:
#   1. build (or reuse from ~/.cache/triton-ft) kube-apiserver, controller-manager,
#      scheduler, kubectl at the patch pinned for the stack's default EKS minor,
#      etcd and kwok (test/k8s/build-control-plane.sh);
#   2. vitest: start etcd + the control plane + kwok on 127.0.0.1, apply every
#      stack's synth-rendered manifests to GPU-shaped fake nodes, and stop
#      every process it started.
# The runner's set-up and clean-up are the shared ones (test/lib/suite.sh).
# With TEST_REPORT_DIR set, the JUnit report goes to k8s.xml there.
set -euo pipefail
# shellcheck source=test/lib/suite.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_init k8s

minor=$(npx --no-install tsx test/k8s/k8s-minor.ts)
log "phase: control-plane binaries for Kubernetes $minor"
bin=$(bash test/k8s/build-control-plane.sh "$minor" | tail -n 1)
version=$("$bin/kube-apiserver" --version | awk '{print $2}')
log "binaries ready in $((SECONDS - SUITE_START))s: $version in $bin"

suite_workdir k8s
suite_vitest k8s "control-plane suite setup (see the [k8s-setup] lines above)" \
  K8S_BIN_DIR="$bin" K8S_VERSION="$version" K8S_WORK_DIR="$SUITE_WORK" K8S_KEEP_WORK_DIR=1
