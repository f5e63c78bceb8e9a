#!/usr/bin/env bash
# Builds the suites' Python venvs ahead of the suites: .ci/run starts it in the
# background right after Node, so the downloads (about 12 GB of PyPI wheels on a
# cold machine: the torch venv, the vLLM venv, tritonserver's, the scanners')
# happen while the checks and the first suites run, instead of each suite
# downloading its own when it reaches it.
#
# Each build is test/lib/pyenv.sh's own, under the venv's lock, with the
# interpreter the suite uses (the key holds its version): a suite that reaches a
# venv still building waits for it (and says so, naming this build's log); one
# whose build failed here builds it again itself (pyenv.sh), so a failure is
# retried by the suite and, if it fails again, fails that suite: never skipped.
#
# Two chains side by side, each in the order the suites need their venvs:
#   test/python's (a 3.10 where one is at hand): lint, light, torch;
#   python3's: tritonserver's (the triton, gateway and vLLM suites), the security
#   scanners, vLLM's.
# Niced like the background Go builds: the suites in the foreground keep the CPU.
#
# usage: test/lib/prebuild-venvs.sh <log-dir>
#   one log per venv, <log-dir>/venv-<lock path with / as ->.log (pip's package
#   lines and a heartbeat); a line per venv started and finished on stdout.
#   Exits 1 if any build failed (the log says why).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
logs=${1:?usage: prebuild-venvs.sh <log-dir>}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)

# shellcheck source=test/lib/python310.sh
source "$root/test/lib/python310.sh"
python3_for_converters=${PYTHON:-$(find_python310 || echo python3)}
python3_for_servers=${PYTHON:-python3}

say() { printf '%s [venvs] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# chain <python> <lock>...: builds each lock's venv in turn; fails if any failed.
chain() {
  local python=$1 lock log started failed=0
  shift
  for lock in "$@"; do
    log=$logs/venv-${lock//\//-}.log
    log=${log%.lock.log}.log
    started=$SECONDS
    say "$lock: preparing (progress in ${log#"$root"/})"
    if PYTHON=$python nice -n 10 bash "$root/test/lib/pyenv.sh" "$root/$lock" >/dev/null 2>"$log"; then
      say "$lock: ready after $((SECONDS - started)) s"
    else
      say "$lock: FAILED after $((SECONDS - started)) s (see ${log#"$root"/}); the suite that needs it builds it again"
      failed=1
    fi
  done
  return "$failed"
}

chain "$python3_for_converters" \
  test/python/requirements-lint.lock test/python/requirements.lock test/python/requirements-torch.lock &
converters=$!
chain "$python3_for_servers" \
  test/triton/requirements.lock test/security/requirements.lock test/vllm/requirements.lock &
servers=$!

status=0
wait "$converters" || status=1
wait "$servers" || status=1
if ((status == 0)); then say "all ready"; else say "done; at least one build failed (above)"; fi
exit "$status"
