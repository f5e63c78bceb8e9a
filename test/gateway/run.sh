#!/usr/bin/env bash
# Gateway suite, one entry point for CI and for developers:
#   1. vitest: the gateway processes in front of a real tritonserver (FT
#      stand-in in decoupled mode), driven by the official `openai` client and
#      raw HTTP: completions, streaming, chat, the bad-request catalogue,
#      limits, disconnects, KServe v2, metrics, logs, the latency bound;
#   2. a short bench (`npm run bench -- --local --store`): the same workload
#      direct to Triton, through the gateway, and through a gateway using a
#      real shared store, in one run; the report records the gateway's added
#      latency ratio and what the store adds. It counts as one test case: it passes
#      when both targets served every request.
# With TEST_REPORT_DIR set, JUnit reports go to gateway-vitest.xml and
# gateway-bench.xml there, and the bench report to $TEST_REPORT_DIR/../bench/.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

log() { printf '%s [gateway-suite] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# The gateway's dependencies come with the root `npm ci` (an npm workspace).

start=$SECONDS
vitest_args=(run --config test/gateway/vitest.config.mts --reporter=default)
reports=${TEST_REPORT_DIR:-}
if [[ -n $reports ]]; then
  mkdir -p "$reports"
  vitest_args+=(--reporter=junit --outputFile.junit="$reports/gateway-vitest.xml")
fi

status=0
log "phase: gateway suite on the real tritonserver (vitest)"
vitest_status=0
npx --no-install vitest "${vitest_args[@]}" || vitest_status=$?
[[ $vitest_status -eq 0 ]] || status=1
if [[ $vitest_status -ne 0 && -n $reports ]] && ! grep -q '<failure' "$reports/gateway-vitest.xml" 2>/dev/null; then
  # globalSetup failed (server or gateway did not start): one failure, so the total cannot read green.
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="gateway-vitest" tests="1" failures="1"><testcase classname="test/gateway" name="gateway suite setup"><failure message="vitest failed without a failed test: see globalSetup output"/></testcase></testsuite></testsuites>\n' >"$reports/gateway-vitest-setup.xml"
fi

log "phase: short bench, direct and through the gateway"
bench_out=${reports:+$reports/../bench}
bench_out=${bench_out:-out/bench}
bench_status=0
npm run --silent bench -- --local --store --concurrency 1,4 --duration 4 --max-tokens 16 --warmup 20 --out "$bench_out" >/dev/null || bench_status=$?
if [[ $bench_status -eq 0 ]]; then
  # shellcheck disable=SC2016  # JavaScript, not shell
  bench_status=$(node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const levels = Object.values(r.targets).flat();
    const bad = levels.length < 4 || levels.some((l) => l.errors > 0 || l.requests === 0);
    for (const o of r.gatewayOverhead ?? []) console.error(`gateway added latency c=${o.concurrency}: p50 x${o.latencyP50Ratio}, p95 x${o.latencyP95Ratio}`);
    for (const o of r.storeOverhead ?? []) console.error(`store added latency c=${o.concurrency}: p50 ${o.latencyP50AddedMs} ms, p99 ${o.latencyP99AddedMs} ms`);
    console.log(bad ? 1 : 0);' "$bench_out/bench.json")
fi
[[ $bench_status -eq 0 ]] || status=1
if [[ -n $reports ]]; then
  failure=""
  [[ $bench_status -eq 0 ]] || failure='<failure message="the bench failed or a target refused requests: see its output"/>'
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="gateway-bench" tests="1" failures="%d"><testcase classname="scripts/bench" name="bench direct and through the gateway">%s</testcase></testsuite></testsuites>\n' \
    "$([[ -n $failure ]] && echo 1 || echo 0)" "$failure" >"$reports/gateway-bench.xml"
fi

log "done in $((SECONDS - start))s, status $status (bench report: $bench_out/bench.html)"
exit "$status"
