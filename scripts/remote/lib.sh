# shellcheck shell=bash
# Shared helpers for the remote build steps (sourced, never executed).
#
# Every step script follows the same shape:
#   1. source this file, call `step_init <step-name> <config-file>`;
#   2. compute its input hash with `step_input_hash <extra files...>`;
#   3. `step_skip_if_done` (prints the stored RESULT lines and exits 0 when a
#      finished run with the same inputs left its marker);
#   4. do the work in phases (`phase <name>`), staging output in a temp
#      location that is renamed into place only when complete;
#   5. `step_done` writes the marker LAST, so an interrupted run never looks
#      finished.
#
# Markers live in $WORK_ROOT/state/<step>.done and hold `input_hash=<hex>`
# followed by the step's `RESULT key=value` lines.

# Guard against double sourcing: tests source lib.sh directly too.
if [[ -n ${TRITON_FT_LIB_LOADED:-} ]]; then
  return 0
fi
TRITON_FT_LIB_LOADED=1

TRITON_FT_LIB_PATH=$(readlink -f "${BASH_SOURCE[0]}")
# Root of the shipped scripts tree (the folder holding remote/ and convert/).
# shellcheck disable=SC2034 # used by the step scripts
TRITON_FT_SCRIPTS_ROOT=$(dirname "$(dirname "$TRITON_FT_LIB_PATH")")

STEP_NAME=${STEP_NAME:-unknown}
STEP_PHASE=init
STEP_CONFIG=""
STEP_INPUT_HASH=""
STEP_RESULTS=()

# ---------------------------------------------------------------- logging --

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

# Digest-pinned image reference <registry>/<repository>@sha256:<64 hex>: the
# same pattern as DIGEST_REF in infra/imageRef.ts (test/unit/scriptHeaders.test.ts
# keeps the two equal).
DIGEST_REF_RE='^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$'

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

# ------------------------------------------------------------- step config --

# step_init <step-name> <config-file>
# Sources the step config (plain KEY='value' assignments and bash arrays),
# sets WORK_ROOT and the state folders, installs the error trap.
step_init() {
  STEP_NAME=$1
  STEP_CONFIG=${2:-}
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
  STATE_DIR=$WORK_ROOT/state
  TMP_ROOT=$WORK_ROOT/tmp
  ensure_dir "$WORK_ROOT"
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

# ensure_dir <dir> : creates a folder owned by the current user, using
# passwordless sudo only when the parent is not writable (e.g. /opt).
ensure_dir() {
  local d=$1
  [[ -d $d && -w $d ]] && return 0
  if mkdir -p "$d" 2>/dev/null && [[ -w $d ]]; then
    return 0
  fi
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n mkdir -p "$d"
    sudo -n chown "$(id -u):$(id -g)" "$d"
    return 0
  fi
  die "cannot create writable folder $d (no permission and no passwordless sudo)"
}

# ------------------------------------------------------------ input hashes --

# Names that never reach a remote step's work even when they sit in a shipped
# folder: Python bytecode caches (the helpers write them when they run), test
# and type-checker caches, editor backups. The Pulumi side skips the same
# names (infra/repoFiles.ts), so both hash the same files.
HASH_IGNORED_DIRS=(__pycache__ .pytest_cache .mypy_cache node_modules)
HASH_IGNORED_FILES=('*.pyc' '*~')

# hash_files <file-or-dir>... : prints one sha256 over the names and contents
# of the given files; folders are walked in a stable order, without the
# ignored names above. Missing paths are an error, since a silently skipped
# input would make the hash lie.
hash_files() {
  local p d f
  local prune=() skip=()
  for d in "${HASH_IGNORED_DIRS[@]}"; do prune+=(-name "$d" -o); done
  for f in "${HASH_IGNORED_FILES[@]}"; do skip+=(! -name "$f"); done
  # Checked up front: a die inside the pipeline below would only end a subshell.
  for p in "$@"; do
    [[ -e $p ]] || die "input to hash does not exist: $p"
  done
  {
    for p in "$@"; do
      if [[ -d $p ]]; then
        printf 'dir %s\n' "$p"
        (cd "$p" && find . \( -type d \( "${prune[@]::${#prune[@]}-1}" \) -prune \) -o \( -type f "${skip[@]}" -print0 \) \
          | LC_ALL=C sort -z | xargs -0 -r sha256sum)
      elif [[ -f $p ]]; then
        printf 'file %s %s\n' "$p" "$(sha256sum <"$p" | cut -d' ' -f1)"
      fi
    done
  } | sha256sum | cut -d' ' -f1
}

# step_input_hash [extra files...] : hash of the step config, the calling
# script, lib.sh and any files/folders the step consumes. Sets STEP_INPUT_HASH.
step_input_hash() {
  local script
  script=$(readlink -f "$0")
  STEP_INPUT_HASH=$(hash_files "$STEP_CONFIG" "$script" "$TRITON_FT_LIB_PATH" "$@")
  log "input hash $STEP_INPUT_HASH"
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
  STEP_PHASE="done"
  log "step finished; marker written to $m"
}

# ------------------------------------------------------------------ misc --

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

# free_gib <path> : free space (GiB, rounded down) of the filesystem holding path.
free_gib() {
  local kib
  kib=$(df -Pk "$1" | awk 'NR==2 {print $4}')
  [[ $kib =~ ^[0-9]+$ ]] || die "could not read free disk space of $1 from df"
  echo $((kib / 1024 / 1024))
}

# check_free_disk <path> <required-gib>
check_free_disk() {
  local path=$1 need=$2 have
  have=$(free_gib "$path")
  if ((have < need)); then
    die "not enough free disk on the filesystem of $path: ${have} GiB free, ${need} GiB required (grow the root volume or free space)"
  fi
  log "free disk on $path: ${have} GiB (need ${need} GiB)"
}

# replace_dir <staged> <final> : moves a completed staging folder into place.
# The old folder is moved aside first (to <final>.old) and removed after the
# rename, so the final path is never a half-written mix of old and new
# content. An interruption between the two renames (INT, TERM, HUP: the SSH
# session of `pulumi up` going away) puts the old folder back; after a kill
# that no trap sees, the next call removes the leftover first. Either way no
# second copy of multi-GB weights stays behind.
replace_dir() {
  local staged=$1 final=$2 old
  old=$final.old
  ensure_dir "$(dirname "$final")"
  # Leftovers of interrupted runs, including the <final>.old.<pid> copies older versions made.
  rm -rf "$old" "$final".old.[0-9]*
  if [[ -e $final ]]; then
    mv "$final" "$old"
  fi
  trap '_replace_dir_rollback "$old" "$final"; exit 130' INT TERM HUP
  mv "$staged" "$final"
  trap - INT TERM HUP
  rm -rf "$old"
}

_replace_dir_rollback() {
  if [[ ! -e $2 && -e $1 ]]; then mv "$1" "$2"; fi
  log "interrupted while swapping $2 in; the previous content is back in place"
}

# substitute_placeholders <array-name> <KEY=value>... : replaces {{KEY}} in
# every element of the named array (used for plan argv that refers to
# folders only known at run time, e.g. the staging output folder).
substitute_placeholders() {
  local -n _arr=$1
  shift
  local i kv key val
  for i in "${!_arr[@]}"; do
    for kv in "$@"; do
      key=${kv%%=*}
      val=${kv#*=}
      _arr[i]=${_arr[i]//"{{$key}}"/$val}
    done
  done
}

# --------------------------------------------------------------------- ECR --

# ecr_split <repository-url> : sets ECR_REGISTRY and ECR_REPO_NAME from
# <account>.dkr.ecr.<region>.amazonaws.com/<name>.
ecr_split() {
  local url=$1
  [[ $url == */* ]] || die "ECR repository URL '$url' has no '/<repository-name>' part"
  # shellcheck disable=SC2034 # globals read by the step scripts
  ECR_REGISTRY=${url%%/*}
  # shellcheck disable=SC2034
  ECR_REPO_NAME=${url#*/}
}

# ecr_login <region> <registry> : the password goes through a pipe, never
# through an argument or a log line.
ecr_login() {
  local region=$1 registry=$2
  retry 3 5 _ecr_login_once "$region" "$registry" \
    || die "docker login to $registry failed; check the instance role's ECR permissions"
  log "logged in to $registry"
}

_ecr_login_once() {
  aws ecr get-login-password --region "$1" | docker login --username AWS --password-stdin "$2" >/dev/null
}

# ecr_tag_digest <region> <repository-name> <tag> : prints the digest
# (sha256:...) of the tag, or nothing when the tag does not exist. Any other
# failure (credentials, missing repository) is fatal: treating it as "not
# there" would start an hour-long build that then fails to push.
ecr_tag_digest() {
  local out err
  err=$(mktemp)
  if out=$(aws ecr describe-images --region "$1" --repository-name "$2" \
    --image-ids "imageTag=$3" --query 'imageDetails[0].imageDigest' --output text 2>"$err"); then
    rm -f "$err"
    [[ $out == sha256:* ]] || die "unexpected describe-images answer for $2:$3: '$out'"
    printf '%s\n' "$out"
    return 0
  fi
  if grep -q 'ImageNotFoundException' "$err"; then
    rm -f "$err"
    return 0
  fi
  log "aws ecr describe-images failed: $(tr '\n' ' ' <"$err")"
  rm -f "$err"
  die "cannot query ECR repository $2 in $1"
}

# push_image <region> <repository-name> <local-ref> <tag> : pushes the image
# (with retries) and prints the digest ECR recorded for the tag, so the result
# names exactly what was pushed.
push_image() {
  local digest
  retry 3 30 docker push "$3" >&2
  digest=$(ecr_tag_digest "$1" "$2" "$4")
  [[ -n $digest ]] || die "pushed $3 but ECR does not list tag $4"
  printf '%s\n' "$digest"
}

# pull_image <region> <image> [logged-in-registry] : pulls a digest-pinned
# image (with retries), logging in to its registry first when it is ECR and
# not the one this step already logged in to.
pull_image() {
  local registry=${2%%/*}
  if [[ $registry == *.dkr.ecr.*.amazonaws.com && $registry != "${3:-}" ]]; then
    ecr_login "$1" "$registry"
  fi
  retry 3 30 docker pull -q "$2" >/dev/null
}

# The image steps (build-triton-with-ft.sh, bake.sh, build-gateway-image.sh)
# share one tail: log in to the repository's registry, look the content-hash
# tag up, build and push only when it is missing, protect the image, record the
# results:
#   image_step_login
#   registry_digest "$tag"
#   if [[ -z $IMAGE_DIGEST ]]; then ...; build_and_push "$ctx" "$tag" [args]; fi
#   finish_image_step "$IMAGE_DIGEST" "$tag"
# Each needs ecr_split "$ECR_REPOSITORY_URL" and AWS_REGION.

# image_step_login : logs in to the registry the step pushes to.
image_step_login() {
  phase ecr-login
  require_cmd aws docker
  ecr_login "$AWS_REGION" "$ECR_REGISTRY"
}

# registry_digest <tag> : sets IMAGE_DIGEST to the digest ECR holds for
# $ECR_REPOSITORY_URL:<tag>, or to nothing when the tag is not there yet. Call
# it as a plain statement (not in an `if`), so that a failed lookup still ends
# the step.
registry_digest() {
  phase check-registry
  IMAGE_DIGEST=$(ecr_tag_digest "$AWS_REGION" "$ECR_REPO_NAME" "$1")
  if [[ -n $IMAGE_DIGEST ]]; then
    log "tag $1 already in ECR ($IMAGE_DIGEST); not building"
  fi
}

# build_and_push <context-dir> <tag> [docker build args...] : builds
# $ECR_REPOSITORY_URL:<tag> (retried: Docker's layer cache resumes an
# interrupted build) and pushes it; sets IMAGE_DIGEST to what ECR recorded.
# Needs ecr_split "$ECR_REPOSITORY_URL" and a login to its registry.
build_and_push() {
  local ctx=$1 tag=$2 local_ref
  shift 2
  local_ref="$ECR_REPOSITORY_URL:$tag"
  phase build
  retry 2 30 docker build "$@" -t "$local_ref" "$ctx" >&2
  phase push
  # shellcheck disable=SC2034 # read by the image steps
  IMAGE_DIGEST=$(push_image "$AWS_REGION" "$ECR_REPO_NAME" "$local_ref" "$tag")
}

# finish_image_step <digest> <tag> : protects the image from expiry (tag live),
# then the image steps' results, then the marker.
finish_image_step() {
  phase protect
  ecr_protect "$AWS_REGION" "$ECR_REPO_NAME" "$1"
  result image "$ECR_REPOSITORY_URL@$1"
  result tag "$2"
  step_done
}

# ecr_protect <region> <repository-name> <digest> : tags the image `live`,
# and the image that was `live` before it `previous`. These are the only
# mutable tags of the repositories, and the lifecycle policy never expires an
# image that carries one (infra/cloud/ecr.ts): the deployed image
# survives even when it is the oldest push (a skipped bake keeps its date).
ecr_protect() {
  local region=$1 repo=$2 digest=$3 current
  current=$(aws ecr describe-images --region "$region" --repository-name "$repo" \
    --image-ids imageTag=live --query 'imageDetails[0].imageDigest' --output text 2>/dev/null || true)
  if [[ $current == sha256:* && $current != "$digest" ]]; then
    _ecr_move_tag "$region" "$repo" "$current" previous
  fi
  if [[ $current != "$digest" ]]; then
    _ecr_move_tag "$region" "$repo" "$digest" live
  fi
  log "protected $repo@$digest from expiry (tag live)"
}

# _ecr_move_tag <region> <repository-name> <digest> <tag> : points a mutable tag at a digest.
_ecr_move_tag() {
  local manifest media
  manifest=$(aws ecr batch-get-image --region "$1" --repository-name "$2" --image-ids "imageDigest=$3" \
    --query 'images[0].imageManifest' --output text) || die "cannot read the manifest of $2@$3"
  media=$(aws ecr batch-get-image --region "$1" --repository-name "$2" --image-ids "imageDigest=$3" \
    --query 'images[0].imageManifestMediaType' --output text) || die "cannot read the manifest type of $2@$3"
  aws ecr put-image --region "$1" --repository-name "$2" --image-tag "$4" \
    --image-manifest "$manifest" --image-manifest-media-type "$media" >/dev/null \
    || die "cannot tag $2@$3 as $4 (the repository must allow moving tag $4: IMMUTABLE_WITH_EXCLUSION)"
}
