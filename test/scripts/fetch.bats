#!/usr/bin/env bats
# fetch.sh under stubbed huggingface-cli / curl and a stub checker interpreter.

load helpers

setup() {
  common_setup
  echo '{"family":"gptneox"}' >"$BATS_TEST_TMPDIR/expected-arch.json"
  CFG=$BATS_TEST_TMPDIR/fetch.env
  cat >"$CFG" <<CONF
WORK_ROOT='$WORK'
SOURCE_KIND='hf'
MODEL_DIR='$WORK/models/source'
HF_REPO_ID='h2oai/h2ogpt-oig-oasst1-512-6_9b'
HF_REVISION='0123456789abcdef0123456789abcdef01234567'
HF_INCLUDE=('*.json' '*.bin')
EXPECTED_FILES=('config.json' 'pytorch_model*.bin')
CHECK_FAMILY='gptneox'
CHECK_EXPECTED_JSON='$BATS_TEST_TMPDIR/expected-arch.json'
CHECK_PYTHON='fake-python'
REQUIRED_FREE_GIB='30'
CONF
}

@test "fetch: downloads at the revision, verifies, installs and stamps the model" {
  export HF_TOKEN=$HF_SECRET
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 huggingface-cli "download h2oai/h2ogpt-oig-oasst1-512-6_9b --revision 0123456789abcdef0123456789abcdef01234567 --local-dir $WORK/models/source.partial --include \\*.json --include \\*.bin"
  assert_calls 1 fake-python "--family gptneox --expected $BATS_TEST_TMPDIR/expected-arch.json --config $WORK/models/source.partial"
  [ -f "$WORK/models/source/config.json" ]
  [ ! -e "$WORK/models/source.partial" ]
  grep -q '^input_hash=' "$WORK/models/source/.triton-ft-fetch"
  assert_output_has "RESULT model_dir=$WORK/models/source"
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
  assert_output_has "RESULT model_dir=$WORK/models/source"
  assert_calls 1 huggingface-cli
}

@test "fetch: a failed verification keeps the partial download and the re-run resumes into it" {
  export STUB_CHECK_RC=1
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "does not match the expected gptneox architecture"
  [ -d "$WORK/models/source.partial" ]
  [ ! -e "$WORK/models/source" ]
  [ ! -e "$WORK/state/fetch.done" ]
  touch "$WORK/models/source.partial/already-downloaded-shard"
  export STUB_CHECK_RC=0
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  # Same staging folder: huggingface-cli only fetches what is missing.
  [ -f "$WORK/models/source/already-downloaded-shard" ]
  [ -e "$WORK/state/fetch.done" ]
}

@test "fetch: a partial download of another revision is discarded" {
  export STUB_CHECK_RC=1
  run bash "$S/fetch.sh" "$CFG"
  touch "$WORK/models/source.partial/old-revision-file"
  export STUB_CHECK_RC=0
  sed -i "s/^HF_REVISION=.*/HF_REVISION='fedcba9876543210fedcba9876543210fedcba98'/" "$CFG"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "discarding a partial download"
  [ ! -e "$WORK/models/source/old-revision-file" ]
}

@test "fetch: missing expected files fail clearly" {
  export STUB_HF_FILES='config.json'
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "download incomplete: no file matches 'pytorch_model*.bin'"
  [ ! -e "$WORK/state/fetch.done" ]
}

@test "fetch: too little disk fails before downloading" {
  export STUB_DF_AVAIL_KIB=$((5 * 1024 * 1024))
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "5 GiB free, 30 GiB required"
  assert_calls 0 huggingface-cli
}

@test "fetch: a branch revision is allowed with a warning" {
  sed -i "s/^HF_REVISION=.*/HF_REVISION='KoGPT6B-ryan1.5b-float16'/" "$CFG"
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "WARNING: HF_REVISION 'KoGPT6B-ryan1.5b-float16' is a branch or tag"
}

make_archive() {
  mkdir -p "$BATS_TEST_TMPDIR/arc/step_383500/shard_0"
  echo weights >"$BATS_TEST_TMPDIR/arc/step_383500/shard_0/0.npz"
  tar -C "$BATS_TEST_TMPDIR/arc" -I zstd -cf "$BATS_TEST_TMPDIR/slim.tar.zstd" step_383500
  export STUB_ARCHIVE=$BATS_TEST_TMPDIR/slim.tar.zstd
  ARCHIVE_SUM=$(sha256sum "$STUB_ARCHIVE" | cut -d' ' -f1)
  cat >"$CFG" <<CONF
WORK_ROOT='$WORK'
SOURCE_KIND='archive'
MODEL_DIR='$WORK/models/source'
ARCHIVE_URL='https://example.invalid/GPT-J-6B/step_383500_slim.tar.zstd'
ARCHIVE_SHA256='$ARCHIVE_SUM'
ARCHIVE_SUBDIR='step_383500'
EXPECTED_FILES=('shard_0/*.npz')
TOKENIZER_REPO_ID='EleutherAI/gpt-j-6b'
TOKENIZER_REVISION='0123456789abcdef0123456789abcdef01234567'
TOKENIZER_DIR='$WORK/models/tokenizer'
TOKENIZER_INCLUDE=('tokenizer.json' 'config.json')
CONF
}

@test "fetch: archive source is checksummed, extracted with zstd, tokenizer fetched" {
  make_archive
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ -f "$WORK/models/source/shard_0/0.npz" ]
  [ -f "$WORK/models/tokenizer/tokenizer.json" ]
  assert_calls 1 curl "https://example.invalid/GPT-J-6B/step_383500_slim.tar.zstd"
  assert_calls 1 huggingface-cli "download EleutherAI/gpt-j-6b"
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
  export STUB_FAIL_ALWAYS='huggingface-cli:EleutherAI'
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  unset STUB_FAIL_ALWAYS
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 curl
  [ -f "$WORK/models/source/shard_0/0.npz" ]
  [ -f "$WORK/models/tokenizer/tokenizer.json" ]
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
  sed -i "s/^TOKENIZER_INCLUDE=.*/TOKENIZER_INCLUDE=('config.json' 'tokenizer.json' 'special_tokens_map.json')\nTOKENIZER_REQUIRED=('config.json' 'tokenizer.json')/" "$CFG"
  export STUB_HF_FILES='config.json tokenizer.json'
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ -f "$WORK/models/tokenizer/tokenizer.json" ]
  rm -rf "$WORK/state" "$WORK/models/tokenizer"
  export STUB_HF_FILES='config.json'
  run bash "$S/fetch.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "tokenizer download lacks 'tokenizer.json'"
}
