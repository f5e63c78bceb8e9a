#!/usr/bin/env bash
# Step 3 — fetch: downloads the model at its pinned revision and verifies it.
# Independent of the triton_with_ft build (runs on the host, in parallel).
#
# usage: fetch.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines and arrays, rendered by the Pulumi program):
#   WORK_ROOT            string  Work root.                                        default '/opt/triton-ft'
#   SOURCE_KIND          string  'hf' (Hugging Face repo) or 'archive' (tar.zst URL checked by sha256).
#   MODEL_DIR            string  Absolute final folder of the model.               e.g. '/opt/triton-ft/work/gpt2/source'
#   -- SOURCE_KIND='hf':
#   HF_REPO_ID           string  Repository id.                                    e.g. 'kakaobrain/kogpt'
#   HF_REVISION          string  Commit, branch or tag to download.                e.g. 'KoGPT6B-ryan1.5b-float16'
#   HF_INCLUDE           array   Optional; --include patterns.                     e.g. ('*.json' '*.bin' '*.txt')
#   HF_EXCLUDE           array   Optional; --exclude patterns.                     e.g. ('*.msgpack' '*.h5')
#   -- SOURCE_KIND='archive':
#   ARCHIVE_URL          string  https URL of a .tar.zst (or .tar.zstd) archive.   e.g. 'https://.../step_383500_slim.tar.zstd'
#   ARCHIVE_SHA256       string  64-hex sha256 of the archive.
#   ARCHIVE_SUBDIR       string  Optional; folder inside the archive that becomes MODEL_DIR. e.g. 'step_383500'
#   -- tokenizer (optional; for sources without tokenizer files, e.g. the GPT-J JAX checkpoint):
#   TOKENIZER_REPO_ID    string  HF repository to take tokenizer files from.      e.g. 'EleutherAI/gpt-j-6b'
#   TOKENIZER_REVISION   string  Its revision.                                     e.g. a 40-hex commit
#   TOKENIZER_DIR        string  Absolute folder for the tokenizer files.          e.g. '/opt/triton-ft/work/gpt-j-6b-jax/tokenizer'
#   TOKENIZER_INCLUDE    array   Files to take.                                    e.g. ('vocab.json' 'merges.txt' 'tokenizer.json' 'tokenizer_config.json')
#   TOKENIZER_REQUIRED   array   Optional; those that must exist. default: all of TOKENIZER_INCLUDE
#   -- verification:
#   EXPECTED_FILES       array   Paths or globs relative to MODEL_DIR; each must match a file. e.g. ('config.json' 'pytorch_model*.bin')
#   CHECK_FAMILY         string  Optional; family for check_model_config.py (runs on the host, stdlib only). e.g. 'gptneox'
#   CHECK_EXPECTED_JSON  string  Optional; absolute path of the expected-architecture JSON (required with CHECK_FAMILY).
#   CHECK_PYTHON         string  Optional; interpreter for the check.              default 'python3'
#   HF_TOKEN_STDIN       string  Optional; 'true' = read the Hugging Face token from the first line of stdin.
#   REQUIRED_FREE_GIB    int     Optional; free disk needed before downloading.    default '0'
#
# The Hugging Face token is never a config value: it arrives as the HF_TOKEN
# environment variable (or on stdin with HF_TOKEN_STDIN='true'). The script
# never puts it on a command line or in a log; huggingface-cli reads it from
# the environment itself.
#
# Output: MODEL_DIR (and TOKENIZER_DIR) are replaced only once the download
# is complete and verified; MODEL_DIR/.triton-ft-fetch records the input hash
# so later steps can include it in theirs.
#
# Prints: RESULT model_dir=<MODEL_DIR>, RESULT input_hash=<hash>
set -euo pipefail
set +x # the token is in the environment; never trace

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init fetch "${1:-}"
require_vars SOURCE_KIND MODEL_DIR
require_abs_path MODEL_DIR
REQUIRED_FREE_GIB=${REQUIRED_FREE_GIB:-0}
require_int REQUIRED_FREE_GIB
CHECK_PYTHON=${CHECK_PYTHON:-python3}
default_array HF_INCLUDE HF_EXCLUDE TOKENIZER_INCLUDE EXPECTED_FILES
declare -p TOKENIZER_REQUIRED >/dev/null 2>&1 || TOKENIZER_REQUIRED=("${TOKENIZER_INCLUDE[@]}")
((${#EXPECTED_FILES[@]})) || die "EXPECTED_FILES is empty; the step cannot verify the download without it"

case $SOURCE_KIND in
  hf)
    require_vars HF_REPO_ID HF_REVISION
    if ! is_commit "$HF_REVISION"; then
      warn "HF_REVISION '$HF_REVISION' is a branch or tag, not a commit; the download may change over time"
    fi
    ;;
  archive)
    require_vars ARCHIVE_URL ARCHIVE_SHA256
    [[ $ARCHIVE_URL == https://* ]] || die "ARCHIVE_URL must be an https URL, got '$ARCHIVE_URL'"
    [[ $ARCHIVE_SHA256 =~ ^[0-9a-fA-F]{64}$ ]] || die "missing pin: ARCHIVE_SHA256 must be a 64-hex sha256"
    ARCHIVE_SHA256=${ARCHIVE_SHA256,,}
    ;;
  *) die "SOURCE_KIND must be 'hf' or 'archive', got '$SOURCE_KIND'" ;;
esac
if [[ -n ${TOKENIZER_REPO_ID:-} ]]; then
  require_vars TOKENIZER_REVISION TOKENIZER_DIR
  require_abs_path TOKENIZER_DIR
  ((${#TOKENIZER_INCLUDE[@]})) || die "TOKENIZER_INCLUDE must list the tokenizer files to download"
fi
check_inputs=()
if [[ -n ${CHECK_FAMILY:-} ]]; then
  require_vars CHECK_EXPECTED_JSON
  require_abs_path CHECK_EXPECTED_JSON
  check_script=$TRITON_FT_SCRIPTS_ROOT/convert/check_model_config.py
  [[ -f $check_script ]] || die "model config checker not found: $check_script"
  [[ -f $CHECK_EXPECTED_JSON ]] || die "CHECK_EXPECTED_JSON not found: $CHECK_EXPECTED_JSON"
  check_inputs=("$check_script" "$CHECK_EXPECTED_JSON")
fi

if [[ ${HF_TOKEN_STDIN:-} == true ]]; then
  IFS= read -r HF_TOKEN || true
  [[ -n $HF_TOKEN ]] || die "HF_TOKEN_STDIN is set but stdin held no token"
  export HF_TOKEN
fi

# The token is deliberately not part of the input hash: rotating it must not
# re-download the model.
step_input_hash "${check_inputs[@]}"
step_skip_if_done

phase disk
ensure_dir "$(dirname "$MODEL_DIR")"
check_free_disk "$(dirname "$MODEL_DIR")" "$REQUIRED_FREE_GIB"

# hf_download <repo> <revision> <dest> <include-array> <exclude-array>
# huggingface-cli resumes into an existing --local-dir, so an interrupted
# run continues where it stopped.
hf_download() {
  local repo=$1 rev=$2 dest=$3
  local -n _inc=$4 _exc=$5
  local args=(download "$repo" --revision "$rev" --local-dir "$dest")
  local p
  for p in "${_inc[@]}"; do args+=(--include "$p"); done
  for p in "${_exc[@]}"; do args+=(--exclude "$p"); done
  if [[ -z ${HF_TOKEN:-} ]]; then
    log "no HF_TOKEN in the environment; downloading anonymously"
  fi
  retry 3 30 huggingface-cli "${args[@]}" >/dev/null
}

ensure_hf_cli() {
  if command -v huggingface-cli >/dev/null 2>&1; then return 0; fi
  local venv=$WORK_ROOT/tools/hf-venv
  log "huggingface-cli missing; installing huggingface_hub into $venv"
  python3 -m venv "$venv"
  retry 3 10 "$venv/bin/pip" install --quiet --disable-pip-version-check 'huggingface_hub[cli]==0.26.5'
  PATH=$venv/bin:$PATH
}

staging=$MODEL_DIR.partial
# A run interrupted after installing MODEL_DIR (e.g. during the tokenizer
# download) must not download the model again.
if [[ -f $MODEL_DIR/.triton-ft-fetch && ! -d $staging ]] \
  && grep -qx "input_hash=$STEP_INPUT_HASH" "$MODEL_DIR/.triton-ft-fetch"; then
  log "$MODEL_DIR already holds this download; reusing it"
  mv "$MODEL_DIR" "$staging"
  rm -f "$staging/.triton-ft-fetch"
  touch "$staging/.triton-ft-reused"
fi
if [[ -f $staging/.triton-ft-reused ]]; then
  log "model files already downloaded and verified once; skipping the download"
else case $SOURCE_KIND in
  hf)
    phase download
    ensure_hf_cli
    # Resume only a partial download of the same source; anything else
    # (another revision or file filter) starts clean.
    source_key="hf $HF_REPO_ID $HF_REVISION inc:${HF_INCLUDE[*]} exc:${HF_EXCLUDE[*]}"
    if [[ -d $staging && "$(cat "$staging/.triton-ft-source" 2>/dev/null)" != "$source_key" ]]; then
      log "discarding a partial download of another source"
      rm -rf "$staging"
    fi
    ensure_dir "$staging"
    printf '%s\n' "$source_key" >"$staging/.triton-ft-source"
    hf_download "$HF_REPO_ID" "$HF_REVISION" "$staging" HF_INCLUDE HF_EXCLUDE
    ;;
  archive)
    phase download
    require_cmd curl sha256sum tar zstd
    downloads=$WORK_ROOT/downloads
    ensure_dir "$downloads"
    archive=$downloads/$ARCHIVE_SHA256.tar.zst
    if [[ ! -f $archive ]]; then
      # -C - resumes a partial download left by an interrupted run.
      retry 5 30 curl -fsSL --retry 3 -C - -o "$archive.partial" "$ARCHIVE_URL"
      phase checksum
      got=$(sha256sum <"$archive.partial" | cut -d' ' -f1)
      if [[ $got != "$ARCHIVE_SHA256" ]]; then
        rm -f "$archive.partial"
        die "checksum mismatch for $ARCHIVE_URL: got $got, expected $ARCHIVE_SHA256 (partial download removed)"
      fi
      mv "$archive.partial" "$archive"
    else
      log "archive already downloaded and verified: $archive"
    fi
    phase extract
    rm -rf "$staging" "$staging.x"
    log "extracting $archive"
    mkdir -p "$staging.x"
    tar -I zstd -xf "$archive" -C "$staging.x"
    if [[ -n ${ARCHIVE_SUBDIR:-} ]]; then
      [[ -d $staging.x/$ARCHIVE_SUBDIR ]] || die "archive has no folder '$ARCHIVE_SUBDIR'"
      mv "$staging.x/$ARCHIVE_SUBDIR" "$staging"
      rm -rf "$staging.x"
    else
      mv "$staging.x" "$staging"
    fi
    ;;
esac; fi

if [[ -n ${TOKENIZER_REPO_ID:-} ]]; then
  phase tokenizer
  ensure_hf_cli
  # shellcheck disable=SC2034 # passed by name to hf_download
  no_excludes=()
  ensure_dir "$TOKENIZER_DIR.partial"
  hf_download "$TOKENIZER_REPO_ID" "$TOKENIZER_REVISION" "$TOKENIZER_DIR.partial" TOKENIZER_INCLUDE no_excludes
  for f in "${TOKENIZER_REQUIRED[@]}"; do
    compgen -G "$TOKENIZER_DIR.partial/$f" >/dev/null || die "tokenizer download lacks '$f' (repo $TOKENIZER_REPO_ID@$TOKENIZER_REVISION)"
  done
fi

phase verify
for f in "${EXPECTED_FILES[@]}"; do
  compgen -G "$staging/$f" >/dev/null \
    || die "download incomplete: no file matches '$f' in $staging (check HF_REVISION / HF_INCLUDE)"
done
log "all ${#EXPECTED_FILES[@]} expected file patterns present"
if [[ -n ${CHECK_FAMILY:-} ]]; then
  PYTHONDONTWRITEBYTECODE=1 "$CHECK_PYTHON" "$check_script" --family "$CHECK_FAMILY" --expected "$CHECK_EXPECTED_JSON" --config "$staging" >&2 \
    || die "model config in $staging does not match the expected $CHECK_FAMILY architecture (see check output above)"
fi

phase install
rm -f "$staging/.triton-ft-reused"
printf 'input_hash=%s\n' "$STEP_INPUT_HASH" >"$staging/.triton-ft-fetch"
replace_dir "$staging" "$MODEL_DIR"
if [[ -n ${TOKENIZER_REPO_ID:-} ]]; then
  replace_dir "$TOKENIZER_DIR.partial" "$TOKENIZER_DIR"
fi
if [[ $SOURCE_KIND == archive ]]; then
  # The extracted copy is what later steps use; the archive only costs disk.
  rm -f "$WORK_ROOT/downloads/$ARCHIVE_SHA256.tar.zst"
fi

result model_dir "$MODEL_DIR"
result input_hash "$STEP_INPUT_HASH"
step_done
