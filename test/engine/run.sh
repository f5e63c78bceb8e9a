#!/usr/bin/env bash
# Real Pulumi engine suite, one entry point for CI and developers:
#   1. build (or reuse from ~/.cache/triton-ft) the Pulumi CLI and the
#      Kubernetes provider (test/engine/build-engine.sh), and the control
#      plane with kwok (test/k8s/build-control-plane.sh, shared with the k8s suite);
#   2. vitest: start the control plane on 127.0.0.1, run the real program()
#      through the Automation API in a promoted kubeconfig-mode stack (preview,
#      up, updates, refresh, policy, destroy) and in the three-model example
#      promoted in create mode with autoscaling and the in-cluster store (the
#      cloud's plugins are test/engine/plugins/, fakes), and stop every process
#      it started.
# The runner's set-up and clean-up are the shared ones (test/lib/suite.sh).
# With TEST_REPORT_DIR set, the JUnit report goes to engine.xml there.
set -euo pipefail
# shellcheck source=test/lib/suite.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_init engine

minor=$(npx --no-install tsx test/k8s/k8s-minor.ts)
log "phase: control-plane binaries for Kubernetes $minor, Pulumi CLI and Kubernetes provider"
k8s_bin=$(bash test/k8s/build-control-plane.sh "$minor" | tail -n 1)
engine_bin=$(bash test/engine/build-engine.sh | tail -n 1)
version=$("$k8s_bin/kube-apiserver" --version | awk '{print $2}')
log "binaries ready in $((SECONDS - SUITE_START))s: $version in $k8s_bin; $("$engine_bin/pulumi" version) in $engine_bin"

suite_workdir engine
suite_vitest engine "engine suite setup (see the [k8s-setup] and [engine-suite] lines above)" \
  K8S_BIN_DIR="$k8s_bin" K8S_VERSION="$version" K8S_WORK_DIR="$SUITE_WORK" K8S_KEEP_WORK_DIR=1 \
  ENGINE_BIN_DIR="$engine_bin"
