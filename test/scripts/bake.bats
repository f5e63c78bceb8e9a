#!/usr/bin/env bats
# bake.sh under stubbed docker/aws: context layout, launcher, tags, refusals,
# with the step config synth renders for the dev stack (GPT-2, TP 1).

load helpers

SERVER_REPO=$TEST_REGISTRY/triton-ft-test/server

setup() {
  common_setup
  W=$WORK/work/gpt2
  REPO=$WORK/plan/model-repository
  mkdir -p "$W/ft/1-gpu" "$W/gemm" "$W/source" "$WORK/images"
  printf '[gpt]\nhead_num = 12\n' >"$W/ft/1-gpu/config.ini"
  printf 'w' >"$W/ft/1-gpu/model.wte.bin"
  echo 'input_hash=conv1' >"$W/ft/.triton-ft-convert"
  printf '1 2 3\n' >"$W/gemm/gemm_config.in"
  for m in ensemble preprocessing fastertransformer postprocessing; do
    mkdir -p "$REPO/$m/1"
    echo "name: \"$m\"" >"$REPO/$m/config.pbtxt"
  done
  # GPT-2's tokenizer files: the preset's vocabulary plus auxiliary ones it ships.
  echo '{"model_type":"gpt2"}' >"$W/source/config.json"
  echo '{}' >"$W/source/vocab.json"
  printf '#version: 0.2\n' >"$W/source/merges.txt"
  echo '{"tokenizer":true}' >"$W/source/tokenizer.json"
  echo '{}' >"$W/source/tokenizer_config.json"
  echo '{"files":[]}' >"$WORK/plan/expected-weights.json"
  # The server image recipe and Python code the step ships (images/server).
  cp -a "$REPO_ROOT/images/server" "$WORK/images/server"
  CFG=$BATS_TEST_TMPDIR/bake.env
  plan_conf dev bake >"$CFG"
}

@test "bake: verifies, assembles the context, builds FROM the digest, pushes and prints the ref" {
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 docker "verify_weights.py --expected $WORK/plan/expected-weights.json $W/ft/1-gpu"
  assert_calls 1 docker "--build-arg BASE_IMAGE=$BASE_REF"
  assert_calls 1 docker "--build-arg CHECKPOINT_PATH=/opt/triton-ft/weights/1-gpu"
  assert_calls 1 docker "--build-arg CUDA_VISIBLE_DEVICES=0"
  assert_calls 1 docker "push $SERVER_REPO:bake-"
  [[ $output =~ RESULT\ image=$SERVER_REPO@sha256:[0-9a-f]{64} ]]
  ctx=$STUB_STATE/last-build-context
  for f in ./Dockerfile ./weights/config.ini ./weights/model.wte.bin ./gemm_config.in \
    ./model-repository/ensemble/config.pbtxt ./python-models/preprocessing/1/model.py \
    ./python-models/postprocessing/1/model.py ./python/tritonft/__init__.py \
    ./tokenizer/config.json ./tokenizer/vocab.json ./tokenizer/merges.txt \
    ./tokenizer/tokenizer.json ./tokenizer/tokenizer_config.json ./serve; do
    grep -qx -- "$f" "$ctx" || { echo "context lacks $f" >&2; cat "$ctx" >&2; return 1; }
  done
  # The launcher runs the plan's command from the WORKDIR holding gemm_config.in.
  grep -qx 'cd /workspace' "$STUB_STATE/last-serve"
  grep -q 'exec mpirun -n 1 /opt/tritonserver/bin/tritonserver --model-repository=/opt/triton-ft/model-repository "\$@"' "$STUB_STATE/last-serve"
  grep -q 'CUDA_VISIBLE_DEVICES:-0' "$STUB_STATE/last-serve"
  bash -n "$STUB_STATE/last-serve"
  grep -q "^image=$SERVER_REPO@sha256:" "$WORK/results/server-image.env"
}

@test "bake: same inputs skip; a changed tokenizer re-bakes with a new tag" {
  run bash "$S/bake.sh" "$CFG"
  tag1=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  run bash "$S/bake.sh" "$CFG"
  assert_output_has "skipping"
  assert_output_has "RESULT tag=$tag1"
  assert_calls 1 docker build
  echo '{"tokenizer":2}' >"$W/source/tokenizer.json"
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -eq 0 ]
  tag2=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  [ "$tag1" != "$tag2" ]
  assert_calls 2 docker build
}

@test "bake: an image already in ECR is reused without building" {
  run bash "$S/bake.sh" "$CFG"
  rm -rf "$WORK/state"
  : >"$STUB_LOG"
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "already in ECR"
  assert_calls 0 docker build
}

@test "bake: refuses to bake when the weight verifier fails" {
  export STUB_VERIFY_RC=1
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "weight verifier failed"
  assert_calls 0 docker build
  [ ! -e "$WORK/state/bake.done" ]
}

@test "bake: refuses a missing config.ini, gemm_config.in, model or tokenizer file" {
  rm "$W/ft/1-gpu/config.ini"
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "has no config.ini; refusing to bake"
  printf '[gpt]\n' >"$W/ft/1-gpu/config.ini"
  rm "$W/gemm/gemm_config.in"
  run bash "$S/bake.sh" "$CFG"
  assert_output_has "run the gemm step first"
  printf '1\n' >"$W/gemm/gemm_config.in"
  rm "$REPO/ensemble/config.pbtxt"
  run bash "$S/bake.sh" "$CFG"
  assert_output_has "model repository lacks ensemble/config.pbtxt"
  echo 'name: "ensemble"' >"$REPO/ensemble/config.pbtxt"
  rm "$W/source/merges.txt"
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "tokenizer file missing"
  assert_calls 0 docker
}

@test "bake: resumes after a failed push" {
  export STUB_FAIL_ALWAYS='docker:push'
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "failed in phase 'push'"
  [ ! -e "$WORK/state/bake.done" ]
  unset STUB_FAIL_ALWAYS
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ -e "$WORK/state/bake.done" ]
  [ ! -e "$WORK/tmp/bake-context" ]
}

@test "bake: refuses a tag-only base image and a bad GPU list" {
  sed -i "s|^BASE_IMAGE=.*|BASE_IMAGE='triton_with_ft:23.05'|" "$CFG"
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "BASE_IMAGE must be digest-pinned"
  sed -i "s|^BASE_IMAGE=.*|BASE_IMAGE='$BASE_REF'|; s|^LAUNCH_CUDA_VISIBLE_DEVICES=.*|LAUNCH_CUDA_VISIBLE_DEVICES='all'|" "$CFG"
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "LAUNCH_CUDA_VISIBLE_DEVICES must be a GPU index list"
}

@test "server Dockerfile orders layers weights -> gemm -> repository -> python -> models -> tokenizer" {
  order=$(grep -E '^COPY ' "$REPO_ROOT/images/server/Dockerfile" | awk '{print $2}' | tr '\n' ' ')
  [ "$order" = "weights/ gemm_config.in model-repository/ python/ python-models/ tokenizer/ serve " ]
  grep -qx 'FROM ${BASE_IMAGE}' "$REPO_ROOT/images/server/Dockerfile"
}

@test "bake: optional tokenizer files are taken when present and skipped when absent" {
  sed -i "/^TOKENIZER_OPTIONAL_FILES=/d; s/^TOKENIZER_FILES=.*/TOKENIZER_FILES=('tokenizer.json')\nTOKENIZER_OPTIONAL_FILES=('tokenizer_config.json' 'special_tokens_map.json')/" "$CFG"
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -eq 0 ]
  ctx=$STUB_STATE/last-build-context
  grep -qx ./tokenizer/tokenizer_config.json "$ctx"
  run grep -qx ./tokenizer/special_tokens_map.json "$ctx"
  [ "$status" -ne 0 ]
}

@test "bake: refuses tokenizer files without any vocabulary" {
  rm "$W/source/vocab.json" "$W/source/tokenizer.json"
  sed -i "/^TOKENIZER_OPTIONAL_FILES=/d; s/^TOKENIZER_FILES=.*/TOKENIZER_FILES=('tokenizer_config.json')\nTOKENIZER_OPTIONAL_FILES=('vocab.json')/" "$CFG"
  run bash "$S/bake.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "no tokenizer.json or vocab.json among the tokenizer files"
  assert_calls 0 docker
}

@test "bake: SIGKILLed during the image build, the re-run builds once more, pushes and records the image" {
  export STUB_KILL_ONCE='docker:build'
  run_session bash "$S/bake.sh" "$CFG"
  assert_killed bake
  assert_output_has "phase: build"
  [ ! -e "$WORK/results/server-image.env" ]
  : >"$STUB_LOG"
  run_session bash "$S/bake.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 docker "build"
  assert_calls 1 docker "push $SERVER_REPO:bake-"
  [[ $output =~ RESULT\ image=$SERVER_REPO@sha256:[0-9a-f]{64} ]]
  grep -q "^image=$SERVER_REPO@sha256:" "$WORK/results/server-image.env"
  grep -q '^input_hash=' "$WORK/state/bake.done"
}
