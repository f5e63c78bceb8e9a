#!/usr/bin/env bats
# build-triton-with-ft.sh under stubbed git, docker and aws, with the step
# config synth renders for the dev stack (the pins of Pulumi.dev.yaml, SM 86).

load helpers

BACKEND_SHA=c6936c39be6fc57c161db34cfe5c45d1bef81ee2
FT_SHA=df4a7534860137e060e18d2ebf019906120ea204
REPO_URL=$TEST_REGISTRY/triton-ft-test/triton_with_ft

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/build.env
  plan_conf dev triton-with-ft >"$CFG"
  # The recipe the step ships (DOCKERFILE_DIR is under the builder's images/).
  mkdir -p "$WORK/images"
  cp -a "$REPO_ROOT/images/triton_with_ft" "$WORK/images/triton_with_ft"
  ln -s "$WORK/images/triton_with_ft" "$BATS_TEST_TMPDIR/recipe"
  echo "BUILD_JOBS='4'" >>"$CFG"
  grep -qx "FT_BACKEND_COMMIT='$BACKEND_SHA'" "$CFG"
  grep -qx "SM_LIST='86'" "$CFG"
}

@test "build: clones both pins, builds with the SM list, pushes and prints the digest ref" {
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 git "fetch -q --depth 1 origin $BACKEND_SHA"
  assert_calls 1 git "fetch -q --depth 1 origin $FT_SHA"
  assert_calls 1 docker "build"
  assert_calls 1 docker "--build-arg SM=86"
  assert_calls 1 docker "--build-arg TRITON_VERSION=23.05"
  assert_calls 1 docker "push $REPO_URL:twf-23.05-"
  [[ $output =~ RESULT\ image=$REPO_URL@sha256:[0-9a-f]{64} ]]
  # The context holds the recipe and both checkouts, without .git.
  grep -qx './Dockerfile' "$STUB_STATE/last-build-context"
  grep -qx './FasterTransformer/README' "$STUB_STATE/last-build-context"
  grep -qx './fastertransformer_backend/README' "$STUB_STATE/last-build-context"
  refute grep -q '/.git/' "$STUB_STATE/last-build-context"
  # Result file for the Pulumi side.
  grep -q "^image=$REPO_URL@sha256:" "$WORK/results/triton-with-ft.env"
  # stdout carries only RESULT lines (logs are on stderr).
  run bash -c "bash '$S/build-triton-with-ft.sh' '$CFG' 2>/dev/null"
  [ "$status" -eq 0 ]
  refute grep -qv '^RESULT ' <<<"$output"
}

@test "build: marker with the same inputs skips everything" {
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  first=$(grep '^RESULT image=' <<<"$output")
  : >"$STUB_LOG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  assert_output_has "$first"
  [ "$(wc -l <"$STUB_LOG")" -eq 0 ]
}

@test "build: an existing tag in ECR skips the build (new work root, same inputs)" {
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  rm -rf "$WORK/state"
  : >"$STUB_LOG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "already in ECR"
  assert_calls 0 docker build
  assert_calls 0 git
}

@test "build: the tag changes with the SM list and the recipe, not with BUILD_JOBS" {
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  tag1=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  sed -i "s/^BUILD_JOBS=.*/BUILD_JOBS='2'/" "$CFG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  tag2=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  [ "$tag1" = "$tag2" ]
  sed -i "s/^SM_LIST=.*/SM_LIST='80,86'/" "$CFG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  tag3=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  [ "$tag3" != "$tag1" ]
  echo "# changed" >>"$BATS_TEST_TMPDIR/recipe/Dockerfile"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  tag4=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  [ "$tag4" != "$tag3" ]
  [[ $tag1 == twf-23.05-* ]]
}

@test "build: resumes after a failed push without re-cloning" {
  export STUB_FAIL_ONCE='docker:push'
  # retry would absorb a single failure; make push fail for all its attempts.
  export STUB_FAIL_ALWAYS='docker:push'
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "failed in phase 'push'"
  [ ! -e "$WORK/state/triton-with-ft.done" ]
  unset STUB_FAIL_ALWAYS STUB_FAIL_ONCE
  : >"$STUB_LOG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "already at $BACKEND_SHA"
  assert_output_has "already at $FT_SHA"
  assert_calls 0 git fetch
  assert_calls 1 docker push
  [ -e "$WORK/state/triton-with-ft.done" ]
}

@test "build: a transient fetch failure is retried" {
  export STUB_FAIL_ONCE="git:origin $FT_SHA"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "retrying"
  assert_calls 2 git "origin $FT_SHA"
}

@test "build: a branch name instead of a commit is a missing pin" {
  sed -i "s/^FT_COMMIT=.*/FT_COMMIT='main'/" "$CFG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "missing pin: FT_COMMIT='main' is not a 40-hex git commit"
  assert_calls 0 docker
}

@test "build: an empty backend pin is a missing pin" {
  sed -i "s/^FT_BACKEND_COMMIT=.*/FT_BACKEND_COMMIT=''/" "$CFG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "missing pin: FT_BACKEND_COMMIT is empty"
}

@test "build: a checkout that lands on another commit fails" {
  export STUB_GIT_HEAD_OVERRIDE=ffffffffffffffffffffffffffffffffffffffff
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "expected $BACKEND_SHA"
}

@test "build: too little disk fails before cloning" {
  export STUB_DF_AVAIL_KIB=$((10 * 1024 * 1024))
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "not enough free disk"
  assert_calls 0 git
}

@test "build: bad SM list and Triton version are rejected" {
  sed -i "s/^SM_LIST=.*/SM_LIST='sm_86'/" "$CFG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "SM_LIST must be comma-separated"
  sed -i "s/^SM_LIST=.*/SM_LIST='86'/; s/^TRITON_VERSION=.*/TRITON_VERSION='latest'/" "$CFG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "TRITON_VERSION must look like YY.MM"
}

@test "build: a pinned commit on no upstream branch or tag is refused before compiling" {
  export STUB_GIT_UNREACHABLE=$FT_SHA
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "pinned commit $FT_SHA of https://github.com/NVIDIA/FasterTransformer.git is on no upstream branch or tag"
  # Both repositories' branch and tag history was fetched without blobs; nothing was built.
  assert_calls 2 git "fetch -q --filter=blob:none origin +refs/heads/\*:refs/remotes/origin/\* +refs/tags/\*:refs/tags/\*"
  assert_calls 0 docker build
  [ ! -e "$WORK/src/FasterTransformer" ]
}

@test "build: the pushed image is tagged live; the one before becomes previous" {
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  first=$(cat "$STUB_STATE/ecr/${REPO_URL#*/}/live")
  [[ $first == sha256:* ]]
  [ ! -e "$STUB_STATE/ecr/${REPO_URL#*/}/previous" ]
  sed -i "s/^SM_LIST=.*/SM_LIST='80,86'/" "$CFG"
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ "$(cat "$STUB_STATE/ecr/${REPO_URL#*/}/previous")" = "$first" ]
  [ "$(cat "$STUB_STATE/ecr/${REPO_URL#*/}/live")" != "$first" ]
  assert_output_has "RESULT image=$REPO_URL@$(cat "$STUB_STATE/ecr/${REPO_URL#*/}/live")"
}

@test "build: a green run logs no ERROR" {
  run bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  # A failure inside a process or command substitution must not be logged as
  # the step's failure when the step went on and succeeded.
  refute grep -n 'ERROR' <<<"$output"
}

@test "build: SIGKILLed during the clone, the re-run checks out again and completes; SIGKILLed after the push, the next finds the tag" {
  export STUB_KILL_ONCE="git:$FT_SHA"
  run_session bash "$S/build-triton-with-ft.sh" "$CFG"
  assert_killed triton-with-ft
  assert_output_has "phase: clone"
  unset STUB_KILL_ONCE
  export STUB_KILL_ONCE_AFTER='docker:push'
  run_session bash "$S/build-triton-with-ft.sh" "$CFG"
  assert_killed triton-with-ft
  [ ! -e "$WORK/results/triton-with-ft.env" ]
  : >"$STUB_LOG"
  run_session bash "$S/build-triton-with-ft.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "already in ECR"
  assert_calls 0 docker "build"
  [[ $output =~ RESULT\ image=$REPO_URL@sha256:[0-9a-f]{64} ]]
  grep -q "^image=$REPO_URL@sha256:" "$WORK/results/triton-with-ft.env"
  grep -q '^input_hash=' "$WORK/state/triton-with-ft.done"
}
