# shellcheck shell=bash
# The step life cycle: config, lock, markers, results. See ../lib.sh for the shape.
# Sourced by ../lib.sh (never on its own), with the other lib/ files: it
# may use any helper they define.

# step_init <step-name> <config-file>
# Sources the step config (plain KEY='value' assignments and bash arrays),
# sets WORK_ROOT and the state folders, installs the error trap.
step_init() {
  STEP_NAME=$1
  STEP_CONFIG=${2:-}
  # shellcheck disable=SC2034 # read by _on_error (log.sh)
  STEP_PID=$BASHPID
  set -o errtrace
  trap _on_error ERR
  [[ -n $STEP_CONFIG ]] || die "usage: $0 <step-config-file>"
  [[ -f $STEP_CONFIG && -r $STEP_CONFIG ]] || die "step config not found or unreadable: $STEP_CONFIG"
  STEP_CONFIG=$(readlink -f "$STEP_CONFIG")
  phase config
  # shellcheck source=/dev/null
  source "$STEP_CONFIG"
  WORK_ROOT=${WORK_ROOT:-/opt/triton-ft}
  require_abs_path WORK_ROOT
  # A further model's steps on a builder that converts several (STEP_SCOPE,
  # the model's id) keep their markers, locks and scratch apart from the
  # others'; the first model's paths stay the one-model ones.
  if [[ -n ${STEP_SCOPE:-} ]]; then
    [[ $STEP_SCOPE =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "STEP_SCOPE must be a model id, got '$STEP_SCOPE'"
  fi
  HOST_STATE_DIR=$WORK_ROOT/state
  STATE_DIR=$HOST_STATE_DIR${STEP_SCOPE:+/$STEP_SCOPE}
  TMP_ROOT=$WORK_ROOT/tmp${STEP_SCOPE:+/$STEP_SCOPE}
  ensure_dir "$WORK_ROOT"
  ensure_dir "$HOST_STATE_DIR"
  ensure_dir "$STATE_DIR"
  ensure_dir "$TMP_ROOT"
  log "config $STEP_CONFIG, work root $WORK_ROOT"
  step_lock
}

# step_lock : one run of a step at a time on this host. A second `pulumi up`
# (or a retry while the first still runs over a dropped SSH session) waits
# here, then finds the marker and skips. The lock is an open file descriptor,
# released by the kernel when the process ends, however it ends.
step_lock() {
  local lock=$STATE_DIR/$STEP_NAME.lock
  exec {STEP_LOCK_FD}>>"$lock"
  if ! flock -n "$STEP_LOCK_FD"; then
    log "another run of step $STEP_NAME holds $lock; waiting for it to finish"
    flock "$STEP_LOCK_FD"
  fi
  log "holding the step lock $lock"
}

# host_lock <resource> : one model at a time on this host for what the
# builder is sized for once (gpu: gpt_gemm's timings are only true with the
# GPU to itself; convert: RAM and scratch disk of the largest conversion;
# bake: the build context). Held until the step ends.
host_lock() {
  local lock=$HOST_STATE_DIR/host-$1.lock fd
  exec {fd}>>"$lock"
  if ! flock -n "$fd"; then
    log "another model's step holds $lock; waiting for it"
    flock "$fd"
  fi
  log "holding the host lock $lock"
}

marker_path() { printf '%s/%s.done\n' "$STATE_DIR" "$1"; }

# marker_hash <step> : the input hash recorded by a finished run, or nothing.
marker_hash() {
  local m
  m=$(marker_path "$1")
  [[ -f $m ]] || return 0
  sed -n 's/^input_hash=//p' "$m" | head -n1
}

# step_skip_if_done : exit 0 (re-printing the stored results) when the marker
# records the current input hash.
step_skip_if_done() {
  local m recorded
  m=$(marker_path "$STEP_NAME")
  recorded=$(marker_hash "$STEP_NAME")
  if [[ -n $recorded && $recorded == "$STEP_INPUT_HASH" ]]; then
    log "inputs unchanged since the last successful run; skipping ($m)"
    grep '^RESULT ' "$m" || true
    exit 0
  fi
  if [[ -n $recorded ]]; then
    log "inputs changed since the last run (was $recorded); running again"
  fi
  # A stale marker must not survive a failed re-run, nor stale results.
  rm -f "$m"
  if [[ -n ${RESULT_FILE:-} ]]; then rm -f "$RESULT_FILE.partial"; fi
}

# result <key> <value> : prints `RESULT key=value` on stdout now and records
# it for the marker, so a later skipped run prints the same line.
result() {
  local line="RESULT $1=$2"
  STEP_RESULTS+=("$line")
  printf '%s\n' "$line"
  if [[ -n ${RESULT_FILE:-} ]]; then
    ensure_dir "$(dirname "$RESULT_FILE")"
    printf '%s=%s\n' "$1" "$2" >>"$RESULT_FILE.partial"
  fi
}

# step_done : writes the marker atomically (temp file + rename), last.
step_done() {
  local m tmp
  m=$(marker_path "$STEP_NAME")
  tmp=$m.tmp.$$
  {
    printf 'input_hash=%s\n' "$STEP_INPUT_HASH"
    printf 'finished=%s\n' "$(_ts)"
    if ((${#STEP_RESULTS[@]})); then printf '%s\n' "${STEP_RESULTS[@]}"; fi
  } >"$tmp"
  if [[ -n ${RESULT_FILE:-} && -f $RESULT_FILE.partial ]]; then
    mv -f "$RESULT_FILE.partial" "$RESULT_FILE"
  fi
  mv -f "$tmp" "$m"
  # shellcheck disable=SC2034 # read by _on_error (log.sh)
  STEP_PHASE="done"
  log "step finished; marker written to $m"
}
