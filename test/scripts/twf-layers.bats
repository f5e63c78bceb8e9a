#!/usr/bin/env bats
# build-twf-layers.sh and pull-twf-layers.sh (triton_with_ft's recipe layers
# moved ahead of the compile) under stubbed git, docker and aws, with the step
# configs synth renders for the dev stack; and their shared helper
# scripts/remote/twf/tags.sh against build-triton-with-ft.sh's own formula.

load helpers

REPO_URL=$TEST_REGISTRY/triton-ft-test/triton_with_ft
REPO_NAME=${REPO_URL#*/}

setup() {
  common_setup
  LAYERS_CFG=$BATS_TEST_TMPDIR/layers.env
  PULL_CFG=$BATS_TEST_TMPDIR/pull.env
  MAIN_CFG=$BATS_TEST_TMPDIR/main.env
  plan_conf dev twf-layers >"$LAYERS_CFG"
  plan_conf dev twf-layers-pull >"$PULL_CFG"
  plan_conf dev triton-with-ft >"$MAIN_CFG"
  mkdir -p "$WORK/images"
  cp -a "$REPO_ROOT/images/triton_with_ft" "$WORK/images/triton_with_ft"
  RECIPE=$WORK/images/triton_with_ft
  # The compile host's nproc, as both builds default to it.
  echo "BUILD_JOBS='4'" >>"$LAYERS_CFG"
  echo "BUILD_JOBS='4'" >>"$MAIN_CFG"
}

# build_args <docker build line> : its --build-arg values, one a line.
build_args() {
  grep -o -- "--build-arg [^ ]*" <<<"$1" | sort
}

@test "twf-layers: builds the Dockerfile up to the pip layer from DOCKERFILE_DIR only and pushes its own tag" {
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT layers=pushed"
  assert_calls 1 docker build
  assert_calls 1 docker "push $REPO_URL:twflayers-23.05-"
  # Never tagged live: the lifecycle policy must not keep it in place of a deployed image.
  [ ! -e "$STUB_STATE/ecr/$REPO_NAME/live" ]
  # The truncated Dockerfile: the real one up to the pip layer, without the FT checkouts.
  df=$STUB_STATE/last-build-dockerfile
  grep -q '^FROM nvcr.io/nvidia/tritonserver:' "$df"
  grep -q 'apt-get install' "$df"
  grep -q '^COPY requirements.lock' "$df"
  grep -q 'pip3 install --no-cache-dir --require-hashes' "$df"
  refute grep -q 'FasterTransformer /workspace' "$df"
  refute grep -q 'make -j' "$df"
  n=$(wc -l <"$df")
  diff "$df" <(head -n "$n" "$RECIPE/Dockerfile")
  [ "$(sed -n "$((n + 1))p" "$RECIPE/Dockerfile")" = "COPY FasterTransformer /workspace/FasterTransformer" ]
  # The context is the recipe folder alone.
  diff <(cd "$RECIPE" && find . -type f | LC_ALL=C sort) "$STUB_STATE/last-build-context"
  # stdout carries only RESULT lines.
  rm -rf "$WORK/state"
  run bash -c "bash '$S/build-twf-layers.sh' '$LAYERS_CFG' 2>/dev/null"
  [ "$status" -eq 0 ]
  refute grep -qv '^RESULT ' <<<"$output"
}

@test "twf-layers: the build args are exactly the main build's" {
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -eq 0 ]
  layers=$(grep '^docker build' "$STUB_LOG")
  : >"$STUB_LOG"
  run bash "$S/build-triton-with-ft.sh" "$MAIN_CFG"
  [ "$status" -eq 0 ]
  main=$(grep '^docker build' "$STUB_LOG")
  [ -n "$(build_args "$layers")" ]
  diff <(build_args "$layers") <(build_args "$main")
  # And without BUILD_JOBS in either config both take the host's nproc.
  sed -i '/^BUILD_JOBS=/d' "$LAYERS_CFG"
  rm -rf "$WORK/state" "$STUB_STATE/ecr"
  : >"$STUB_LOG"
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 docker "--build-arg BUILD_JOBS=$(nproc)"
}

@test "twf-layers: one formula: the full image's tag from the helper is build-triton-with-ft.sh's, the layers tag shares its hash" {
  run bash "$S/build-triton-with-ft.sh" "$MAIN_CFG"
  [ "$status" -eq 0 ]
  main_tag=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  helper_tags() {
    (
      # shellcheck source=/dev/null
      source "$S/lib.sh"
      # shellcheck source=/dev/null
      source "$S/twf/tags.sh"
      # shellcheck source=/dev/null
      source "$1"
      h=$(twf_content_hash "$TRITON_VERSION" "$FT_BACKEND_COMMIT" "$FT_COMMIT" "$SM_LIST" "$DOCKERFILE_DIR")
      twf_image_tag "$h" "$TRITON_VERSION"
      twf_layers_tag "$h" "$TRITON_VERSION"
    )
  }
  mapfile -t tags < <(helper_tags "$LAYERS_CFG")
  [ "${tags[0]}" = "$main_tag" ]
  [ "${tags[1]}" = "twflayers-${main_tag#twf-}" ]
  # Upper-case pins in the config: both lower-case them first.
  sed -i "s/^FT_COMMIT='\(.*\)'/FT_COMMIT='\U\1'/" "$LAYERS_CFG"
  mapfile -t upper < <(helper_tags "$LAYERS_CFG")
  [ "${upper[0]}" = "$main_tag" ]
  # Another SM list, another tag, in both.
  sed -i "s/^SM_LIST=.*/SM_LIST='80,86'/" "$LAYERS_CFG" "$MAIN_CFG"
  rm -rf "$WORK/state"
  run bash "$S/build-triton-with-ft.sh" "$MAIN_CFG"
  mapfile -t other < <(helper_tags "$LAYERS_CFG")
  [ "${other[0]}" = "$(sed -n 's/^RESULT tag=//p' <<<"$output")" ]
  [ "${other[0]}" != "$main_tag" ]
}

@test "twf-layers: a re-run skips on its marker; a full image already in ECR skips the build" {
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -eq 0 ]
  : >"$STUB_LOG"
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  assert_output_has "RESULT layers=pushed"
  [ "$(wc -l <"$STUB_LOG")" -eq 0 ]
  # A new work root: the layers tag is in ECR.
  rm -rf "$WORK/state"
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT layers=in-ecr"
  assert_calls 0 docker build
  # A live stack: its full image is in ECR (and no layers image ever was).
  rm -rf "$WORK/state" "$STUB_STATE/ecr"
  run bash "$S/build-triton-with-ft.sh" "$MAIN_CFG"
  [ "$status" -eq 0 ]
  rm -rf "$WORK/state"
  : >"$STUB_LOG"
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT layers=full-image-in-ecr"
  assert_calls 0 docker build
  assert_calls 0 docker push
}

@test "twf-layers: a recipe without the FT COPY line fails clearly" {
  sed -i '/^COPY FasterTransformer/d' "$RECIPE/Dockerfile"
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -ne 0 ]
  assert_output_has "has no line matching"
  assert_calls 0 docker build
  [ ! -e "$WORK/state/twf-layers.done" ]
}

@test "twf-layers-pull: pulls the layers image by digest; a re-run skips; present locally or the full image in ECR skips the pull" {
  run bash "$S/build-twf-layers.sh" "$LAYERS_CFG"
  [ "$status" -eq 0 ]
  digest=$(cat "$STUB_STATE/ecr/$REPO_NAME"/twflayers-*)
  : >"$STUB_LOG"
  run bash "$S/pull-twf-layers.sh" "$PULL_CFG"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT layers=pulled"
  assert_calls 1 docker "pull -q $REPO_URL@$digest"
  : >"$STUB_LOG"
  run bash "$S/pull-twf-layers.sh" "$PULL_CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  [ "$(wc -l <"$STUB_LOG")" -eq 0 ]
  # A new work root, the image still on the host.
  rm -f "$WORK/state/twf-layers-pull.done"
  run bash "$S/pull-twf-layers.sh" "$PULL_CFG"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT layers=present"
  assert_calls 0 docker pull
  # A live stack: the full image is in ECR, nothing is pulled ahead.
  rm -rf "$WORK/state" "$STUB_STATE/ecr" "$STUB_STATE/pulled"
  run bash "$S/build-triton-with-ft.sh" "$MAIN_CFG"
  rm -rf "$WORK/state"
  : >"$STUB_LOG"
  run bash "$S/pull-twf-layers.sh" "$PULL_CFG"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT layers=full-image-in-ecr"
  assert_calls 0 docker pull
}

@test "twf-layers-pull: neither the layers nor the full image in ECR fails, naming both tags" {
  run bash "$S/pull-twf-layers.sh" "$PULL_CFG"
  [ "$status" -ne 0 ]
  assert_output_has "neither twf-23.05-"
  assert_output_has "twflayers-23.05-"
  [ ! -e "$WORK/state/twf-layers-pull.done" ]
}
