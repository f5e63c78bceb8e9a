#!/usr/bin/env bash
# The README's test command (`npm run test:all`): every suite, each in its own
# runner, then one closing line `N passed, N failed` counted from the runners'
# machine-readable reports. A suite that crashes before writing a report counts
# as one failure, so a broken runner can never look green.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
export TEST_REPORT_DIR=${TEST_REPORT_DIR:-$root/out/test-reports}
rm -rf "$TEST_REPORT_DIR"
mkdir -p "$TEST_REPORT_DIR"

# name|command: each suite's own runner; cheapest first, except that the vLLM suite runs before k8s and
# engine: on a cold machine those two wait for their Go-built binaries (.ci/run builds them in the
# background), and the vLLM suite fills that wait.
# k8s and engine run side by side (each on its own control planes and work folders): both mostly wait
# on API servers, rollouts and the Pulumi engine, and neither measures a latency or a duration. The
# suites that do (gateway: TTFT against a baseline, keepalive gaps, rollback within 60 s; vLLM's
# server start-up) keep the machine to themselves.
side_by_side=(k8s)
suites=(
  "unit|npx vitest run --reporter=default --reporter=junit --outputFile.junit=$TEST_REPORT_DIR/unit.xml"
  "scripts|bash test/scripts/run.sh"
  "workflows|bash test/workflows/run.sh"
  "python|bash test/python/run.sh"
  "triton|bash test/triton/run.sh"
  "gateway|bash test/gateway/run.sh"
  "security|bash test/security/run.sh"
  "ssh|bash test/ssh/run.sh"
  "vllm|bash test/vllm/run.sh"
  "k8s|bash test/k8s/run.sh"
  "engine|bash test/engine/run.sh"
)
only=${TEST_SUITES:-}

status=0
crashed=()
# finished <name> <exit status> <seconds>: counts a failed suite, and one without a report as crashed.
finished() {
  local name=$1 rc=$2 took=$3
  if ((rc != 0)); then
    status=1
    # Did the suite leave a report? If not, it crashed rather than failed tests.
    if ! compgen -G "$TEST_REPORT_DIR/$name*" >/dev/null; then crashed+=("$name"); fi
  fi
  printf '===== %s finished in %ds\n' "$name" "$took"
}
# A side-by-side suite runs in the background, its output in $logs/<name>.log (printed whole when it
# has finished, so two suites' lines never interleave), while the next suites run.
logs=$root/out/suite-logs
declare -A bg_pid=()
for entry in "${suites[@]}"; do
  name=${entry%%|*}
  cmd=${entry#*|}
  if [[ -n $only && ",$only," != *",$name,"* ]]; then continue; fi
  printf '\n===== [%s] %s: %s\n' "$(date -u +%H:%M:%S)" "$name" "$cmd"
  start=$SECONDS
  if [[ " ${side_by_side[*]} " == *" $name "* ]]; then
    mkdir -p "$logs"
    printf '===== %s runs beside the next suites; its output: %s (printed when it has finished)\n' "$name" "${logs#"$root"/}/$name.log"
    # Its own length, not the wait for it: the seconds it ran, in $logs/<name>.took.
    (
      rc=0
      bash -c "$cmd" >"$logs/$name.log" 2>&1 || rc=$?
      echo $((SECONDS - start)) >"$logs/$name.took"
      exit "$rc"
    ) &
    bg_pid[$name]=$!
    continue
  fi
  rc=0
  bash -c "$cmd" || rc=$?
  finished "$name" "$rc" $((SECONDS - start))
done
for name in "${!bg_pid[@]}"; do
  rc=0
  wait "${bg_pid[$name]}" || rc=$?
  printf '\n===== [%s] %s (ran beside the others): its output\n' "$(date -u +%H:%M:%S)" "$name"
  cat "$logs/$name.log"
  finished "$name" "$rc" "$(cat "$logs/$name.took" 2>/dev/null || echo "?")"
done

python3 "$root/test/lib/count_results.py" "$TEST_REPORT_DIR" "${crashed[@]}" || status=1
exit $status
