#!/usr/bin/env bash
# Real SSH builder suite: the dev stack's build steps, as the
# program registers them under the mock runtime, replayed over SSH to Debian's
# OpenSSH server on 127.0.0.1 (in a private mount namespace the test creates).
# Needs root (unshare --mount) and openssh-server. With TEST_REPORT_DIR set,
# the JUnit report goes to ssh.xml there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
log() { printf '%s [ssh-suite] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

[[ -x /usr/sbin/sshd ]] || { log "sshd is not installed (Debian: apt-get install openssh-server)"; exit 2; }
command -v unshare >/dev/null || { log "unshare (util-linux) is not installed"; exit 2; }

vitest_args=(run --config test/ssh/vitest.config.mts --reporter=default)
if [[ -n ${TEST_REPORT_DIR:-} ]]; then
  mkdir -p "$TEST_REPORT_DIR"
  vitest_args+=(--reporter=junit --outputFile.junit="$TEST_REPORT_DIR/ssh.xml")
fi
start=$SECONDS
status=0
npx --no-install vitest "${vitest_args[@]}" || status=$?
if [[ $status -ne 0 && -n ${TEST_REPORT_DIR:-} ]]; then
  python3 test/lib/junit_setup_failure.py "$TEST_REPORT_DIR/ssh.xml" "$TEST_REPORT_DIR/ssh-setup.xml" \
    "test/ssh" "SSH builder suite setup (sshd or the mock run failed; see the output above)"
fi
log "done in $((SECONDS - start))s, status $status"
exit "$status"
