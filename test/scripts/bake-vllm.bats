#!/usr/bin/env bats
# bake-vllm.sh under stubbed docker/aws: the vLLM bake of the step config synth
# renders (the mixed stack's TinyLlama; CodeGen on vLLM for the re-layout).

load helpers

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/bake.env
  # The committed mixed stack's vLLM model (a further model: its plan files under plan/tinyllama).
  SYNTH_STACK_DIR=$REPO_ROOT/test/stacks/models
  out=$(cd "$SYNTH_STACK_DIR" && synth_out_in "$SYNTH_STACK_DIR" seed-mixed) || return 1
  to_work <"$out/models/tinyllama/steps/bake.conf" >"$CFG"
  M=$(conf_array "$CFG" MODEL_DIR)
  REPO=$(conf_array "$CFG" MODEL_REPOSITORY_DIR)
  mkdir -p "$M" "$REPO/ensemble" "$WORK/images"
  cp "$out/models/tinyllama/model-repository/ensemble/config.pbtxt" "$REPO/ensemble/config.pbtxt"
  cp "$out/plan.json" "$BATS_TEST_TMPDIR/plan.json"
  # The llama config check reads the plan's architecture file (shipped with the step).
  mkdir -p "$WORK/plan/tinyllama"
  node -e 'const p=require(process.argv[1]); process.stdout.write(JSON.stringify(p.models.tinyllama.fetch.expectedArch, null, 2) + "\n");' \
    "$BATS_TEST_TMPDIR/plan.json" >"$WORK/plan/tinyllama/llama-arch.json"
  printf '%s' '{"model_type":"llama","num_hidden_layers":22,"hidden_size":2048,"num_attention_heads":32,"num_key_value_heads":4,"intermediate_size":5632,"vocab_size":32000,"max_position_embeddings":2048,"bos_token_id":1,"eos_token_id":2}' >"$M/config.json"
  echo '{"tokenizer":true}' >"$M/tokenizer.json"
  printf 'w' >"$M/model.safetensors"
  echo 'input_hash=f1' >"$M/.triton-ft-fetch"
  cp -a "$REPO_ROOT/images/vllm" "$WORK/images/vllm"
  mkdir -p "$WORK/images/server/python"
  cp -a "$REPO_ROOT/images/server/python/tritonft" "$WORK/images/server/python/tritonft"
}

# synth_out_in <dir> <stack> : synth_out for a committed stack file outside the repository root.
synth_out_in() {
  local dir=${SYNTH_DIR:-$BATS_RUN_TMPDIR/synth}
  if [[ ! -f $dir/$2/plan.json ]]; then
    mkdir -p "$dir"
    rm -rf "$dir/$2.partial"
    (cd "$1" && PATH=$REAL_PATH node "$REPO_ROOT/node_modules/tsx/dist/cli.mjs" "$REPO_ROOT/scripts/synth.ts" \
      --stack "$2" --out "$dir/$2.partial" >/dev/null 2>"$dir/$2.stderr") \
      || { cat "$dir/$2.stderr" >&2; return 1; }
    mv "$dir/$2.partial" "$dir/$2"
  fi
  printf '%s\n' "$dir/$2"
}

@test "bake-vllm: checks the config, builds FROM the pinned Triton-with-vLLM digest with the checkpoint and repository, pushes" {
  run bash "$S/bake-vllm.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "check-config"
  assert_calls 1 docker "--build-arg BASE_IMAGE=nvcr.io/nvidia/tritonserver@sha256:"
  assert_calls 1 docker "--build-arg MODEL_PATH=/opt/triton-ft/model"
  assert_calls 0 docker "run "
  [[ $output =~ RESULT\ image=.*/server@sha256:[0-9a-f]{64} ]]
  ctx=$STUB_STATE/last-build-context
  for f in ./Dockerfile ./model/config.json ./model/tokenizer.json ./model/model.safetensors \
    ./model-repository/ensemble/config.pbtxt ./model-repository/ensemble/1/model.py \
    ./model-repository/ensemble/1/tritonft/__init__.py ./model-repository/ensemble/1/tritonvllm/__init__.py ./serve; do
    grep -qx -- "$f" "$ctx" || { echo "context lacks $f" >&2; cat "$ctx" >&2; return 1; }
  done
  # The fetch's stamp stays out of the image.
  run grep -q -- '.triton-ft-fetch' "$ctx"
  [ "$status" -ne 0 ]
  grep -q 'exec /opt/tritonserver/bin/tritonserver --model-repository=/opt/triton-ft/model-repository "\$@"' "$STUB_STATE/last-serve"
}

@test "bake-vllm: same inputs skip; a changed config.pbtxt re-bakes with a new tag" {
  run bash "$S/bake-vllm.sh" "$CFG"
  tag1=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  run bash "$S/bake-vllm.sh" "$CFG"
  assert_output_has "skipping"
  assert_calls 1 docker build
  sed -i 's/"max_logprobs" value { string_value: "5" }/"max_logprobs" value { string_value: "6" }/' "$REPO/ensemble/config.pbtxt"
  run bash "$S/bake-vllm.sh" "$CFG"
  [ "$status" -eq 0 ]
  tag2=$(sed -n 's/^RESULT tag=//p' <<<"$output")
  [ "$tag1" != "$tag2" ]
  assert_calls 2 docker build
}

@test "bake-vllm: refuses a checkpoint whose config.json is not the plan's model" {
  sed -i 's/"num_key_value_heads":4/"num_key_value_heads":32/' "$M/config.json"
  run bash "$S/bake-vllm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "kvHeads: preset has 4, config.json has 32"
  assert_calls 0 docker build
}

@test "bake-vllm: refuses a missing repository config, checkpoint file or tag-only base" {
  mv "$REPO/ensemble/config.pbtxt" "$BATS_TEST_TMPDIR/c.pbtxt"
  run bash "$S/bake-vllm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "lacks ensemble/config.pbtxt"
  mv "$BATS_TEST_TMPDIR/c.pbtxt" "$REPO/ensemble/config.pbtxt"
  rm "$M/tokenizer.json"
  run bash "$S/bake-vllm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "checkpoint file missing: $M/tokenizer.json"
  echo '{}' >"$M/tokenizer.json"
  sed -i "s#^BASE_IMAGE=.*#BASE_IMAGE='nvcr.io/nvidia/tritonserver:26.07-vllm-python-py3'#" "$CFG"
  run bash "$S/bake-vllm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_calls 0 docker build
}

@test "bake-vllm: a CodeGen checkpoint is re-laid out inside the base image once, then reused" {
  out=$(synth_out codegen-vllm)
  to_work <"$out/steps/bake.conf" >"$CFG"
  M=$(conf_array "$CFG" MODEL_DIR)
  REPO=$(conf_array "$CFG" MODEL_REPOSITORY_DIR)
  mkdir -p "$M" "$REPO/ensemble"
  cp "$out/model-repository/ensemble/config.pbtxt" "$REPO/ensemble/config.pbtxt"
  echo '{"model_type":"codegen"}' >"$M/config.json"
  echo '{}' >"$M/vocab.json"
  printf '#version: 0.2\n' >"$M/merges.txt"
  run bash "$S/bake-vllm.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 docker "codegen_to_gptj.py --input $M --output $M.gptj-"
  grep -qx 'nvcr.io/nvidia/tritonserver@sha256:[0-9a-f]*' "$STUB_STATE/run-images"
  grep -qx -- './model/done' "$STUB_STATE/last-build-context"
  rm -rf "$WORK/state"
  run bash "$S/bake-vllm.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "re-layout of this input hash already done"
  assert_calls 1 docker "codegen_to_gptj.py"
}
