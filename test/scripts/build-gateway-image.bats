#!/usr/bin/env bats
# build-gateway-image.sh under stubbed docker and aws, with the step config
# synth renders for the dev stack.

load helpers

REPO_URL=$TEST_REGISTRY/triton-ft-test/gateway

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/gateway.env
  plan_conf dev gateway-image >"$CFG"
  grep -qx "ECR_REPOSITORY_URL='$REPO_URL'" "$CFG"
  # The gateway package the step ships (DOCKERFILE_DIR is under the builder's images/).
  GW=$(conf_array "$CFG" DOCKERFILE_DIR)
  [ "$GW" = "$WORK/images/gateway" ]
  mkdir -p "$GW"
  for f in Dockerfile .dockerignore package.json package-lock.json tsconfig.json src; do
    cp -a "$REPO_ROOT/images/gateway/$f" "$GW/"
  done
}

@test "gateway: builds the sources only, pushes and prints the digest ref" {
  # A developer's installed dependencies and build output must not reach the image or the tag.
  mkdir -p "$GW/node_modules/x" "$GW/dist"
  echo junk >"$GW/node_modules/x/index.js"
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 docker "build"
  assert_calls 1 docker "push $REPO_URL:gateway-"
  [[ $output =~ RESULT\ image=$REPO_URL@sha256:[0-9a-f]{64} ]]
  grep -qx './Dockerfile' "$STUB_STATE/last-build-context"
  grep -qx './src/main.ts' "$STUB_STATE/last-build-context"
  refute grep -q 'node_modules\|/dist/' "$STUB_STATE/last-build-context"
  grep -q "^image=$REPO_URL@sha256:" "$WORK/results/gateway-image.env"
}

@test "gateway: the tag is the content hash; node_modules does not change it, a source edit does" {
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -eq 0 ]
  first=$(grep -o 'RESULT tag=.*' <<<"$output")
  rm -rf "$WORK/state"
  mkdir -p "$GW/node_modules/y"
  echo more >"$GW/node_modules/y/index.js"
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "$first"
  rm -rf "$WORK/state"
  echo "// edit" >>"$GW/src/main.ts"
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -eq 0 ]
  refute grep -qF "$first" <<<"$output"
}

@test "gateway: marker with the same inputs skips everything" {
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -eq 0 ]
  : >"$STUB_LOG"
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  [ "$(wc -l <"$STUB_LOG")" -eq 0 ]
}

@test "gateway: a folder that is not images/gateway is refused, naming the missing file" {
  rm "$GW/package-lock.json"
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "package-lock.json"
}

@test "gateway: a registry lookup that fails (not a missing tag) stops the step before building" {
  export STUB_FAIL_ALWAYS='aws:describe-images'
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "cannot query ECR repository triton-ft-test/gateway"
  assert_output_has "failed in phase 'check-registry'"
  assert_calls 0 docker build
  [ ! -e "$WORK/state/gateway-image.done" ]
}

@test "gateway: SIGKILLed right after the push, the re-run finds the tag in ECR, builds nothing and records the image" {
  export STUB_KILL_ONCE_AFTER='docker:push'
  run_session bash "$S/build-gateway-image.sh" "$CFG"
  assert_killed gateway-image
  [ ! -e "$WORK/results/gateway-image.env" ]
  : >"$STUB_LOG"
  run_session bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "already in ECR"
  assert_calls 0 docker "build"
  assert_calls 0 docker "push"
  [[ $output =~ RESULT\ image=$REPO_URL@sha256:[0-9a-f]{64} ]]
  grep -q "^image=$REPO_URL@sha256:" "$WORK/results/gateway-image.env"
}
