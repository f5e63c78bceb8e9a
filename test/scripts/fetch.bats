#!/usr/bin/env bats
# fetch.sh under stubbed huggingface-cli / curl and a stub checker interpreter,
# with the step configs synth renders: the prod stack (GPT-J 6B from a Hugging
# Face repo) and the script-test stack gptj-jax (the JAX slim archive plus a
# tokenizer from a separate repo; test/scripts/stacks/).

load helpers

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/fetch.env
  plan_conf prod fetch >"$CFG"
  # The checker runs as a stub interpreter here (STUB_CHECK_RC steers it); the
  # python suite runs check_model_config.py for real.
  echo "CHECK_PYTHON='fake-python'" >>"$CFG"
  MODEL_DIR=$(conf_array "$CFG" MODEL_DIR)
  ARCH_JSON=$(conf_array "$CFG" CHECK_EXPECTED_JSON)
  mkdir -p "$(dirname "$ARCH_JSON")"
  plan_value prod fetch.expectedArch >"$ARCH_JSON"
  # A complete download: the files the plan expects, and weights.
  STUB_HF_FILES="$(conf_array "$CFG" EXPECTED_FILES | tr '\n' ' ')pytorch_model.bin"
  export STUB_HF_FILES
}

# The huggingface-cli argv the plan asks for, as the stub logs it.
planned_download() {
  local inc exc
  mapfile -t inc < <(conf_array "$CFG" HF_INCLUDE)
  mapfile -t exc < <(conf_array "$CFG" HF_EXCLUDE)
  printf 'download %s --revision %s --local-dir %s' "$(conf_array "$CFG" HF_REPO_ID)" \
    "$(conf_array "$CFG" HF_REVISION)" "$MODEL_DIR.partial"
  printf ' --include %q' "${inc[@]}"
  printf ' --exclude %q' "${exc[@]}"
}

@test "fetch: downloads at the revision, verifies, installs and stamps the model" {
  export HF_TOKEN=$HF_SECRET
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  [[ $(planned_download) == *"--include \\*.bin"* ]]
  assert_calls 1 huggingface-cli "$(planned_download)"
  assert_calls 1 fake-python "--family $(conf_array "$CFG" CHECK_FAMILY) --expected $ARCH_JSON --config $MODEL_DIR.partial"
  [ -f "$MODEL_DIR/config.json" ]
  [ ! -e "$MODEL_DIR.partial" ]
  grep -q '^input_hash=' "$MODEL_DIR/.triton-ft-fetch"
  assert_output_has "RESULT model_dir=$MODEL_DIR"
  # The token reached huggingface-cli through its environment only.
  grep -qx yes "$STUB_STATE/hf-token-in-env"
  refute grep -q "$HF_SECRET" "$STUB_LOG"
  [[ $output != *"$HF_SECRET"* ]]
  refute grep -rq "$HF_SECRET" "$WORK"
}

@test "fetch: the token can come on stdin and still never shows up" {
  echo "HF_TOKEN_STDIN='true'" >>"$CFG"
  run bash -c "printf '%s\n' '$HF_SECRET' | bash '$S/fetch.sh' '$CFG'"
  [ "$status" -eq 0 ]
  grep -qx yes "$STUB_STATE/hf-token-in-env"
  refute grep -q "$HF_SECRET" "$STUB_LOG"
  [[ $output != *"$HF_SECRET"* ]]
}

@test "fetch: same inputs skip; a new token does not count as a new input" {
  export HF_TOKEN=$HF_SECRET
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  export HF_TOKEN=hf_another_token
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  assert_output_has "RESULT model_dir=$MODEL_DIR"
  assert_calls 1 huggingface-cli
}

@test "fetch: a failed verification keeps the partial download and the re-run resumes into it" {
  export STUB_CHECK_RC=1
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "does not match the expected $(conf_array "$CFG" CHECK_FAMILY) architecture"
  [ -d "$MODEL_DIR.partial" ]
  [ ! -e "$MODEL_DIR" ]
  [ ! -e "$WORK/state/fetch.done" ]
  touch "$MODEL_DIR.partial/already-downloaded-shard"
  export STUB_CHECK_RC=0
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  # Same staging folder: huggingface-cli only fetches what is missing.
  [ -f "$MODEL_DIR/already-downloaded-shard" ]
  [ -e "$WORK/state/fetch.done" ]
}

@test "fetch: a partial download of another revision is discarded" {
  export STUB_CHECK_RC=1
  run bash "$S/fetch.sh" "$CFG"
  touch "$MODEL_DIR.partial/old-revision-file"
  export STUB_CHECK_RC=0
  sed -i "s/^HF_REVISION=.*/HF_REVISION='fedcba9876543210fedcba9876543210fedcba98'/" "$CFG"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "discarding a partial download"
  [ ! -e "$MODEL_DIR/old-revision-file" ]
}

@test "fetch: missing expected files fail clearly" {
  mapfile -t expected < <(conf_array "$CFG" EXPECTED_FILES)
  [ "${#expected[@]}" -ge 2 ]
  export STUB_HF_FILES=${expected[0]}
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "download incomplete: no file matches '${expected[1]}'"
  [ ! -e "$WORK/state/fetch.done" ]
}

@test "fetch: too little disk fails before downloading" {
  export STUB_DF_AVAIL_KIB=$((5 * 1024 * 1024))
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "5 GiB free, $(conf_array "$CFG" REQUIRED_FREE_GIB) GiB required"
  assert_calls 0 huggingface-cli
}

@test "fetch: a branch revision is allowed with a warning" {
  sed -i "s/^HF_REVISION=.*/HF_REVISION='KoGPT6B-ryan1.5b-float16'/" "$CFG"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "WARNING: HF_REVISION 'KoGPT6B-ryan1.5b-float16' is a branch or tag"
}

# make_archive : the gptj-jax stack's fetch config, and a slim archive laid
# out as the plan expects (ARCHIVE_SUBDIR/shard_<i>/ for each EXPECTED_FILES
# pattern) for the stub curl to serve. The config keeps the plan's URL; its
# sha256 becomes this archive's.
make_archive() {
  plan_conf gptj-jax fetch >"$CFG"
  MODEL_DIR=$(conf_array "$CFG" MODEL_DIR)
  TOKENIZER_DIR=$(conf_array "$CFG" TOKENIZER_DIR)
  TOKENIZER_REPO_ID=$(conf_array "$CFG" TOKENIZER_REPO_ID)
  ARCHIVE_URL=$(conf_array "$CFG" ARCHIVE_URL)
  local subdir pattern
  subdir=$(conf_array "$CFG" ARCHIVE_SUBDIR)
  [ -n "$subdir" ]
  while read -r pattern; do
    mkdir -p "$BATS_TEST_TMPDIR/arc/$subdir/${pattern%/*}"
    echo weights >"$BATS_TEST_TMPDIR/arc/$subdir/${pattern%/*}/0.npz"
  done < <(conf_array "$CFG" EXPECTED_FILES)
  tar -C "$BATS_TEST_TMPDIR/arc" -I zstd -cf "$BATS_TEST_TMPDIR/slim.tar.zstd" "$subdir"
  export STUB_ARCHIVE=$BATS_TEST_TMPDIR/slim.tar.zstd
  ARCHIVE_SUM=$(sha256sum "$STUB_ARCHIVE" | cut -d' ' -f1)
  sed -i "s/^ARCHIVE_SHA256=.*/ARCHIVE_SHA256='$ARCHIVE_SUM'/" "$CFG"
  # The tokenizer repo holds every file the plan takes from it.
  STUB_HF_FILES=$(conf_array "$CFG" TOKENIZER_INCLUDE | tr '\n' ' ')
  export STUB_HF_FILES
}

@test "fetch: archive source is checksummed, extracted with zstd, tokenizer fetched" {
  make_archive
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ -f "$MODEL_DIR/shard_0/0.npz" ]
  [ -f "$TOKENIZER_DIR/tokenizer.json" ]
  assert_calls 1 curl "$ARCHIVE_URL"
  assert_calls 1 huggingface-cli "download $TOKENIZER_REPO_ID"
  # The archive is dropped once extracted.
  [ -z "$(ls -A "$WORK/downloads")" ]
}

@test "fetch: archive checksum mismatch fails and removes the partial file" {
  make_archive
  sed -i "s/^ARCHIVE_SHA256=.*/ARCHIVE_SHA256='$(printf '0%.0s' {1..64})'/" "$CFG"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "checksum mismatch"
  [ -z "$(ls -A "$WORK/downloads")" ]
}

@test "fetch: an interrupted tokenizer download does not re-download the archive" {
  make_archive
  export STUB_FAIL_ALWAYS="huggingface-cli:$TOKENIZER_REPO_ID"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  unset STUB_FAIL_ALWAYS
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 curl
  [ -f "$MODEL_DIR/shard_0/0.npz" ]
  [ -f "$TOKENIZER_DIR/tokenizer.json" ]
}

@test "fetch: an unpinned archive is refused" {
  make_archive
  sed -i "s/^ARCHIVE_SHA256=.*/ARCHIVE_SHA256=''/" "$CFG"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "ARCHIVE_SHA256"
}

@test "fetch: tokenizer files outside TOKENIZER_REQUIRED may be absent; a missing required one fails" {
  make_archive
  mapfile -t required < <(conf_array "$CFG" TOKENIZER_REQUIRED)
  # The plan takes optional files besides the required ones, or this test would prove nothing.
  [ "$(conf_array "$CFG" TOKENIZER_INCLUDE | wc -l)" -gt "${#required[@]}" ]
  export STUB_HF_FILES="${required[*]}"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ -f "$TOKENIZER_DIR/${required[-1]}" ]
  rm -rf "$WORK/state" "$TOKENIZER_DIR"
  export STUB_HF_FILES="${required[*]:0:${#required[@]}-1}"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "tokenizer download lacks '${required[-1]}'"
}

@test "fetch: SIGKILLed during the download, the re-run resumes into the same partial folder and completes" {
  export HF_TOKEN=$HF_SECRET
  # The kill comes once huggingface-cli wrote its files, before fetch.sh sees it finish.
  export STUB_KILL_ONCE_AFTER='huggingface-cli:download'
  run_session bash "$S/fetch.sh" "$CFG"
  assert_killed fetch
  [ -d "$MODEL_DIR.partial" ]
  [ ! -e "$MODEL_DIR" ]
  touch "$MODEL_DIR.partial/already-downloaded-shard"
  run_session bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 2 huggingface-cli "$(planned_download)"
  [ -f "$MODEL_DIR/already-downloaded-shard" ]
  [ -f "$MODEL_DIR/config.json" ]
  [ ! -e "$MODEL_DIR.partial" ]
  grep -q '^input_hash=' "$MODEL_DIR/.triton-ft-fetch"
  assert_output_has "RESULT model_dir=$MODEL_DIR"
}
