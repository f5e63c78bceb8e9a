# shellcheck shell=bash
# Checks of the step config values: required, integers, pins, paths.
# Sourced by ../lib.sh (never on its own), with the other lib/ files: it
# may use any helper they define.

require_cmd() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || die "required command not found on PATH: $c"
  done
}

# require_vars NAME... : each must be set and non-empty in the step config.
require_vars() {
  local v
  for v in "$@"; do
    [[ -n ${!v:-} ]] || die "step config ${STEP_CONFIG:-?} does not set required variable $v"
  done
}

# require_int NAME : a non-negative decimal integer.
require_int() {
  [[ ${!1:-} =~ ^[0-9]+$ ]] || die "$1 must be a non-negative integer, got '${!1:-}'"
}

# is_commit <value> : a full git commit id, 40 lowercase/uppercase hex
# characters. A branch or tag name moves, so it is not a pin.
is_commit() {
  [[ $1 =~ ^[0-9a-fA-F]{40}$ ]]
}

# require_commit_pin NAME : the variable holds a commit id (is_commit).
require_commit_pin() {
  local name=$1 value=${!1:-}
  [[ -n $value ]] || die "missing pin: $name is empty; set it to a full 40-hex git commit"
  is_commit "$value" \
    || die "missing pin: $name='$value' is not a 40-hex git commit (branches and tags move; pin a commit)"
}

# require_digest_ref NAME : an image pinned by digest (a tag can move under us).
require_digest_ref() {
  [[ ${!1} =~ $DIGEST_REF_RE ]] \
    || die "$1 must be digest-pinned (<registry>/<repository>@sha256:<64 hex>), got '${!1}'"
}

# default_array NAME... : an array the step config may leave out is empty.
default_array() {
  local name
  for name in "$@"; do
    declare -p "$name" >/dev/null 2>&1 || eval "$name=()"
  done
}

# require_abs_path NAME : an absolute path (the same path is used on the host
# and inside containers, so relative paths would silently differ).
require_abs_path() {
  [[ ${!1:-} == /* ]] || die "$1 must be an absolute path, got '${!1:-}'"
}
