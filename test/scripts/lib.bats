#!/usr/bin/env bats
# Unit tests of scripts/remote/lib.sh helpers.

load helpers

setup() {
  common_setup
  # shellcheck source=scripts/remote/lib.sh
  source "$S/lib.sh"
}

@test "lib: retry stops at the first success and gives up after N attempts" {
  n=0
  flaky() { n=$((n + 1)); ((n >= 3)); }
  retry 5 1 flaky
  [ "$n" -eq 3 ]
  n=0
  run retry 2 1 false
  [ "$status" -ne 0 ]
  assert_output_has "command failed after 2 attempts"
}

@test "lib: hash_files depends on content and names, and fails on a missing input" {
  mkdir -p "$BATS_TEST_TMPDIR/d"
  echo a >"$BATS_TEST_TMPDIR/d/x"
  h1=$(hash_files "$BATS_TEST_TMPDIR/d")
  echo b >"$BATS_TEST_TMPDIR/d/x"
  h2=$(hash_files "$BATS_TEST_TMPDIR/d")
  mv "$BATS_TEST_TMPDIR/d/x" "$BATS_TEST_TMPDIR/d/y"
  h3=$(hash_files "$BATS_TEST_TMPDIR/d")
  [ "$h1" != "$h2" ] && [ "$h2" != "$h3" ]
  [[ $h1 =~ ^[0-9a-f]{64}$ ]]
  run hash_files "$BATS_TEST_TMPDIR/missing"
  [ "$status" -ne 0 ]
  assert_output_has "input to hash does not exist"
}

@test "lib: placeholders are replaced in every element, other text untouched" {
  argv=(python3 '{{SRC}}/x' '--out={{OUT}}' plain '{{SRC}}{{OUT}}')
  substitute_placeholders argv "SRC=/a b" "OUT=/o"
  [ "${argv[1]}" = "/a b/x" ]
  [ "${argv[2]}" = "--out=/o" ]
  [ "${argv[3]}" = "plain" ]
  [ "${argv[4]}" = "/a b/o" ]
}

@test "lib: commit pins accept 40 hex only" {
  GOOD=0123456789abcdef0123456789abcdef01234567
  require_commit_pin GOOD
  for bad in main v1.0 0123456 "0123456789abcdef0123456789abcdef0123456g"; do
    BAD=$bad
    run require_commit_pin BAD
    [ "$status" -ne 0 ]
    assert_output_has "missing pin"
  done
}

@test "lib: replace_dir swaps a staged folder in and drops the old one" {
  mkdir -p "$BATS_TEST_TMPDIR/final" "$BATS_TEST_TMPDIR/staged"
  echo old >"$BATS_TEST_TMPDIR/final/f"
  echo new >"$BATS_TEST_TMPDIR/staged/f"
  replace_dir "$BATS_TEST_TMPDIR/staged" "$BATS_TEST_TMPDIR/final"
  [ "$(cat "$BATS_TEST_TMPDIR/final/f")" = new ]
  [ ! -e "$BATS_TEST_TMPDIR/staged" ]
  [ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name 'final.old*')" ]
}

@test "lib: describe-images errors other than a missing tag are fatal" {
  export STUB_FAIL_ALWAYS='aws:describe-images'
  run ecr_tag_digest us-east-1 repo tag
  [ "$status" -ne 0 ]
  assert_output_has "cannot query ECR repository repo"
  unset STUB_FAIL_ALWAYS
  run ecr_tag_digest us-east-1 repo tag
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}

@test "lib: registry_digest sets IMAGE_DIGEST to the tag's digest, or to nothing when the tag is missing" {
  AWS_REGION=us-east-1
  ECR_REPO_NAME=repo
  IMAGE_DIGEST=stale
  registry_digest tag-a
  [ -z "$IMAGE_DIGEST" ]
  mkdir -p "$STUB_STATE/ecr/repo"
  echo "sha256:$(printf 'a%.0s' {1..64})" >"$STUB_STATE/ecr/repo/tag-a"
  registry_digest tag-a
  [ "$IMAGE_DIGEST" = "sha256:$(printf 'a%.0s' {1..64})" ]
}

@test "lib: the error trap reports only failures the step's shell sees" {
  printf "WORK_ROOT='%s'\n" "$WORK" >"$BATS_TEST_TMPDIR/step.env"
  cat >"$S/trap-demo.sh" <<'DEMO'
source "$(dirname "$0")/lib.sh"
step_init trap-demo "$1"
phase read
# A process substitution's failure: nobody reads its status, the step goes on.
mapfile -t lines < <(printf 'a\n'; false)
phase fail
# A command substitution's failure: the step's shell sees it and stops.
x=$(false)
echo "not reached $x"
DEMO
  run bash "$S/trap-demo.sh" "$BATS_TEST_TMPDIR/step.env"
  [ "$status" -eq 1 ]
  [ "$(grep -c 'ERROR' <<<"$output")" -eq 1 ]
  assert_output_has "ERROR: step 'trap-demo' failed in phase 'fail'"
  refute grep -q "not reached" <<<"$output"
}

@test "lib: every lib/ file is an input of a step's hash, as lib.sh is" {
  printf "WORK_ROOT='%s'\n" "$WORK" >"$BATS_TEST_TMPDIR/step.env"
  cat >"$S/hash-demo.sh" <<'DEMO'
source "$(dirname "$0")/lib.sh"
step_init hash-demo "$1"
step_input_hash
echo "$STEP_INPUT_HASH"
DEMO
  first=$(bash "$S/hash-demo.sh" "$BATS_TEST_TMPDIR/step.env" 2>/dev/null)
  [[ $first =~ ^[0-9a-f]{64}$ ]]
  for f in "$S"/lib/*.sh; do
    echo '# edited' >>"$f"
    now=$(bash "$S/hash-demo.sh" "$BATS_TEST_TMPDIR/step.env" 2>/dev/null)
    [ "$now" != "$first" ] || { echo "editing ${f#"$S"/} left the hash as it was" >&2; return 1; }
    first=$now
  done
}
