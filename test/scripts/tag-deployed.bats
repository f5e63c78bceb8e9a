#!/usr/bin/env bats
# tag-deployed.sh under a stubbed aws: run after a workload rolled out, it
# moves `deployed` to the running image and `deployed-previous` to the one
# before, leaves the build tags (live, previous) alone, and refuses a
# reference that is not digest-pinned.

load helpers

REPO=triton-ft-test/server
IMG_A=$TEST_REGISTRY/$REPO@sha256:$(printf a | sha256sum | cut -d' ' -f1)
IMG_B=$TEST_REGISTRY/$REPO@sha256:$(printf b | sha256sum | cut -d' ' -f1)

setup() {
  common_setup
}

tag_of() { cat "$STUB_STATE/ecr/$REPO/$1"; }

@test "tag-deployed: the first rollout tags deployed, nothing previous" {
  run bash "$S/tag-deployed.sh" us-east-1 "$IMG_A"
  [ "$status" -eq 0 ]
  [ "$(tag_of deployed)" = "${IMG_A#*@}" ]
  [ ! -e "$STUB_STATE/ecr/$REPO/deployed-previous" ]
  assert_output_has "RESULT deployed=$IMG_A"
  assert_calls 1 aws "put-image"
}

@test "tag-deployed: the next rollout moves deployed, and the replaced image becomes deployed-previous" {
  run bash "$S/tag-deployed.sh" us-east-1 "$IMG_A"
  [ "$status" -eq 0 ]
  run bash "$S/tag-deployed.sh" us-east-1 "$IMG_B"
  [ "$status" -eq 0 ]
  [ "$(tag_of deployed)" = "${IMG_B#*@}" ]
  [ "$(tag_of deployed-previous)" = "${IMG_A#*@}" ]
  # Build tags are the build steps' business.
  [ ! -e "$STUB_STATE/ecr/$REPO/live" ]
  [ ! -e "$STUB_STATE/ecr/$REPO/previous" ]
}

@test "tag-deployed: re-running for the deployed image changes nothing" {
  run bash "$S/tag-deployed.sh" us-east-1 "$IMG_A"
  run bash "$S/tag-deployed.sh" us-east-1 "$IMG_B"
  : >"$STUB_LOG"
  run bash "$S/tag-deployed.sh" us-east-1 "$IMG_B"
  [ "$status" -eq 0 ]
  assert_calls 0 aws "put-image"
  [ "$(tag_of deployed-previous)" = "${IMG_A#*@}" ]
}

@test "tag-deployed: a tag-only reference is refused before any call" {
  run bash "$S/tag-deployed.sh" us-east-1 "$TEST_REGISTRY/$REPO:bake-1234"
  [ "$status" -ne 0 ]
  assert_output_has "is not a digest-pinned reference"
  assert_calls 0 aws
}

@test "tag-deployed: a failing ECR lookup fails the command (never treated as no tag)" {
  export STUB_FAIL_ALWAYS="aws:describe-images"
  run bash "$S/tag-deployed.sh" us-east-1 "$IMG_A"
  [ "$status" -ne 0 ]
  assert_calls 0 aws "put-image"
}
