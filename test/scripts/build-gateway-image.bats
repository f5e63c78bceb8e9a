#!/usr/bin/env bats
# build-gateway-image.sh under stubbed docker and aws.

load helpers

REPO_URL=123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-test/gateway

setup() {
  common_setup
  mkdir -p "$BATS_TEST_TMPDIR/gateway"
  for f in Dockerfile .dockerignore package.json package-lock.json tsconfig.json src; do
    cp -a "$REPO_ROOT/images/gateway/$f" "$BATS_TEST_TMPDIR/gateway/"
  done
  CFG=$BATS_TEST_TMPDIR/gateway.env
  cat >"$CFG" <<CONF
WORK_ROOT='$WORK'
AWS_REGION='us-east-1'
ECR_REPOSITORY_URL='$REPO_URL'
DOCKERFILE_DIR='$BATS_TEST_TMPDIR/gateway'
CONF
}

@test "gateway: builds the sources only, pushes and prints the digest ref" {
  # A developer's installed dependencies and build output must not reach the image or the tag.
  mkdir -p "$BATS_TEST_TMPDIR/gateway/node_modules/x" "$BATS_TEST_TMPDIR/gateway/dist"
  echo junk >"$BATS_TEST_TMPDIR/gateway/node_modules/x/index.js"
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
  mkdir -p "$BATS_TEST_TMPDIR/gateway/node_modules/y"
  echo more >"$BATS_TEST_TMPDIR/gateway/node_modules/y/index.js"
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "$first"
  rm -rf "$WORK/state"
  echo "// edit" >>"$BATS_TEST_TMPDIR/gateway/src/main.ts"
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
  rm "$BATS_TEST_TMPDIR/gateway/package-lock.json"
  run bash "$S/build-gateway-image.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "package-lock.json"
}
