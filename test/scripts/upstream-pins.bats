#!/usr/bin/env bats
# build-triton-with-ft.sh against real git repositories (file:// "upstreams"
# built here, serving any commit by SHA as GitHub does): a pinned commit must
# be reachable from an upstream branch or tag. Docker and aws stay stubbed.

load helpers

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
  # The recipe the step ships (DOCKERFILE_DIR is under the builder's images/).
  # shellcheck disable=SC2153 # WORK is exported by common_setup
  mkdir -p "$WORK/images"
  cp -a "$REPO_ROOT/images/triton_with_ft" "$WORK/images/triton_with_ft"
  upstream backend
  BACKEND_MAIN=$MAIN
  upstream ft
  CFG=$T/build.env
}

# config <ft-commit> : the dev stack's triton-with-ft config with the
# upstreams moved to the local ones (FT_BACKEND_REPO_URL and FT_REPO_URL are
# the script's optional overrides) and their commits pinned.
config() {
  plan_conf dev triton-with-ft >"$CFG"
  sed -i -e "s/^FT_BACKEND_COMMIT=.*/FT_BACKEND_COMMIT='$BACKEND_MAIN'/" -e "s/^FT_COMMIT=.*/FT_COMMIT='$1'/" "$CFG"
  grep -qx "FT_COMMIT='$1'" "$CFG"
  cat >>"$CFG" <<CONF
FT_BACKEND_REPO_URL='file://$T/upstream/backend.git'
FT_REPO_URL='file://$T/upstream/ft.git'
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
