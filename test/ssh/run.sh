#!/usr/bin/env bash
# Real SSH builder suite: the dev stack's build steps, as the
# program registers them under the mock runtime, replayed over SSH to Debian's
# OpenSSH server on 127.0.0.1 (in a private mount namespace the test creates).
# Needs root (unshare --mount) and openssh-server. The runner's set-up is the
# shared one (test/lib/suite.sh). With TEST_REPORT_DIR set, the JUnit report
# goes to ssh.xml there.
set -euo pipefail
# shellcheck source=test/lib/suite.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_init ssh

[[ -x /usr/sbin/sshd ]] || { log "sshd is not installed (Debian: apt-get install openssh-server)"; exit 2; }
command -v unshare >/dev/null || { log "unshare (util-linux) is not installed"; exit 2; }

suite_vitest ssh "SSH builder suite setup (sshd or the mock run failed; see the output above)"
