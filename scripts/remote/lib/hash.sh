# shellcheck shell=bash
# Input hashes: what a step's marker records and compares.
# Sourced by ../lib.sh (never on its own), with the other lib/ files: it
# may use any helper they define.

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
# script, lib.sh with its lib/ folder, and any files/folders the step
# consumes. Sets STEP_INPUT_HASH.
step_input_hash() {
  local script
  script=$(readlink -f "$0")
  STEP_INPUT_HASH=$(hash_files "$STEP_CONFIG" "$script" "$TRITON_FT_LIB_PATH" "$TRITON_FT_LIB_DIR" "$@")
  log "input hash $STEP_INPUT_HASH"
}
