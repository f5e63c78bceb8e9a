# shellcheck shell=bash
# Logging, phases and failure reporting of the remote steps: stderr only,
# so stdout carries nothing but the RESULT lines.
# Sourced by ../lib.sh (never on its own), with the other lib/ files: it
# may use any helper they define.

_ts() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# Logs go to stderr so that stdout carries only the parseable RESULT lines.
log() { printf '%s [%s] %s\n' "$(_ts)" "$STEP_NAME" "$*" >&2; }

warn() { log "WARNING: $*"; }

phase() {
  STEP_PHASE=$1
  log "==> phase: $1"
}

die() {
  log "ERROR: $*"
  exit 1
}

# Reports which phase failed; registered as an ERR trap by step_init so that
# a failing command (set -e) still leaves a clear last line in the log.
_on_error() {
  local rc=$?
  # In a subshell (a command or process substitution, a pipeline's part) the
  # failure is the step's only if the step's shell sees it, and that shell's
  # own trap reports it then. Reporting it here logged a false ERROR for a
  # process substitution whose status nobody reads.
  if [[ $BASHPID != "${STEP_PID:-$BASHPID}" ]]; then exit "$rc"; fi
  log "ERROR: step '$STEP_NAME' failed in phase '$STEP_PHASE' (exit $rc, line ${BASH_LINENO[0]})"
  exit "$rc"
}

# retry <attempts> <delay-seconds> <cmd...> : runs cmd until it succeeds,
# doubling the delay after each failure.
retry() {
  # Prefixed locals: bash scoping is dynamic, so plain names like `n` would
  # be visible to (and clobbered by) the command being retried.
  local _r_attempts=$1 _r_delay=$2 _r_n=1
  shift 2
  until "$@"; do
    if ((_r_n >= _r_attempts)); then
      log "command failed after $_r_n attempts: $1"
      return 1
    fi
    warn "attempt $_r_n/$_r_attempts of '$1' failed; retrying in ${_r_delay}s"
    sleep "$_r_delay"
    _r_n=$((_r_n + 1))
    _r_delay=$((_r_delay * 2))
  done
}
