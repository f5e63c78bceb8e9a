#!/usr/bin/env bats
# build-triton-with-ft.sh against real git repositories (file:// "upstreams"
# built here, serving any commit by SHA as GitHub does): a pinned commit must
# be reachable from an upstream branch or tag. Docker and aws stay stubbed.

load helpers

REPO_URL=123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-test-triton-with-ft

# upstream <name> : a bare repo with a branch `main`, a commit only on tag
# `release/v1`, and a pull-request test merge only on refs/pull/7/merge.
upstream() {
  local bare=$T/upstream/$1.git work=$T/upstream/$1-work
  git init -q -b main "$work"
  git -C "$work" -c user.name=t -c user.email=t@e commit -q --allow-empty -m base
  git -C "$work" checkout -q -b release
  git -C "$work" -c user.name=t -c user.email=t@e commit -q --allow-empty -m "tagged only"
  git -C "$work" tag release/v1
  git -C "$work" checkout -q main
  git -C "$work" checkout -q -b pr
  git -C "$work" -c user.name=t -c user.email=t@e commit -q --allow-empty -m "test merge"
  git -C "$work" checkout -q main
  git clone -q --bare "$work" "$bare"
  git -C "$bare" update-ref refs/pull/7/merge "$(git -C "$work" rev-parse pr)"
  git -C "$bare" branch -q -D pr
  git -C "$bare" branch -q -D release
  git -C "$bare" config uploadpack.allowAnySHA1InWant true
  git -C "$bare" config uploadpack.allowFilter true
  MAIN=$(git -C "$work" rev-parse main)
  TAGGED=$(git -C "$work" rev-parse release/v1)
  PR=$(git -C "$work" rev-parse pr)
}

setup() {
  common_setup
  rm -f "$T/bin/git" # the real git
  cp -a "$REPO_ROOT/images/triton_with_ft" "$T/recipe"
  upstream backend
  BACKEND_MAIN=$MAIN
  upstream ft
  CFG=$T/build.env
}

# shellcheck disable=SC2153 # WORK is exported by common_setup
config() {
  cat >"$CFG" <<CONF
WORK_ROOT='$WORK'
AWS_REGION='us-east-1'
ECR_REPOSITORY_URL='$REPO_URL'
TRITON_VERSION='23.05'
FT_BACKEND_REPO_URL='file://$T/upstream/backend.git'
FT_BACKEND_COMMIT='$BACKEND_MAIN'
FT_REPO_URL='file://$T/upstream/ft.git'
FT_COMMIT='$1'
SM_LIST='86'
DOCKERFILE_DIR='$T/recipe'
CONF
}

@test "pins: a commit on a branch builds" {
  config "$MAIN"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "$MAIN is reachable from origin/main"
  assert_calls 1 docker build
}

@test "pins: a commit only on a release tag builds" {
  config "$TAGGED"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "$TAGGED is reachable from release/v1"
  assert_calls 1 docker build
}

@test "pins: a pull request's test merge is fetched by SHA but refused before compiling" {
  config "$PR"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "pinned commit $PR of file://$T/upstream/ft.git is on no upstream branch or tag"
  assert_calls 0 docker build
  [ ! -e "$WORK/src/FasterTransformer" ]
}
