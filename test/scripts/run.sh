#!/usr/bin/env bash
# Runs the remote-step script tests: shellcheck over every shell file of
# scripts/ and test/ (the suites' runners too), then the
# bats suites with TAP output. Exits non-zero on any failure.
#
# usage: test/scripts/run.sh
# env:   TEST_REPORT_DIR  when set, the TAP stream is also written to
#                         $TEST_REPORT_DIR/scripts.tap (one `ok`/`not ok` per test;
#                         the lint pass is counted as one more test).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

log() { printf '== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# CI starts on a fresh machine: install the tools when missing (root only).
need=()
command -v bats >/dev/null 2>&1 || need+=(bats)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
command -v zstd >/dev/null 2>&1 || need+=(zstd)
if ((${#need[@]})); then
  if ((EUID == 0)) && command -v apt-get >/dev/null 2>&1; then
    log "installing ${need[*]}"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
  else
    echo "missing tools: ${need[*]} (install them, or run as root on Debian/Ubuntu)" >&2
    exit 2
  fi
fi

tap=$(mktemp)
trap 'rm -f "$tap"' EXIT

log "shellcheck"
# Every shell file of the remote steps and of the test suites: *.sh and *.bash,
# and the extension-less stubs that start with a bash shebang (test/ssh/stubs).
mapfile -t sh_files < <(cd "$root" && {
  find scripts test -name node_modules -prune -o -type f \( -name '*.sh' -o -name '*.bash' \) -print
  find test -name node_modules -prune -o -type f ! -name '*.*' -print | while read -r f; do
    if head -n1 "$f" | grep -q '^#!.*bash'; then printf '%s\n' "$f"; fi
  done
} | LC_ALL=C sort)
mapfile -t bats_files < <(cd "$root" && find test/scripts -name '*.bats' | LC_ALL=C sort)
sc_status=0
# The .bats files are bash plus @test blocks; shellcheck reads them as bash
# with the bats-specific warnings (run/status/output globals) switched off.
(cd "$root" && shellcheck -x "${sh_files[@]}") >&2 || sc_status=1
(cd "$root" && shellcheck -x -s bash -e SC2030,SC2031,SC2154,SC2034,SC1090,SC1091,SC2016 "${bats_files[@]}") >&2 || sc_status=1

log "bats (${#bats_files[@]} files)"
bats_status=0
(cd "$root" && bats --tap "${bats_files[@]}") >"$tap" || bats_status=$?

# Prepend the shellcheck result as one more TAP test and fix the plan line.
n=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tap" | head -n1)
n=${n:-0}
{
  echo "1..$((n + 1))"
  grep -v '^1\.\.[0-9]*$' "$tap"
  if ((sc_status == 0)); then
    echo "ok $((n + 1)) shellcheck clean: ${#sh_files[@]} scripts, ${#bats_files[@]} bats files"
  else
    echo "not ok $((n + 1)) shellcheck reported problems (see stderr)"
  fi
} >"$tap.full"
mv "$tap.full" "$tap"
cat "$tap"
if [[ -n ${TEST_REPORT_DIR:-} ]]; then
  mkdir -p "$TEST_REPORT_DIR"
  cp "$tap" "$TEST_REPORT_DIR/scripts.tap"
fi

passed=$(grep -c '^ok ' "$tap" || true)
failed=$(grep -c '^not ok ' "$tap" || true)
echo "scripts: $passed passed, $failed failed"
((failed == 0 && bats_status == 0 && sc_status == 0))
