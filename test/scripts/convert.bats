#!/usr/bin/env bats
# convert.sh under a stubbed docker that behaves like the FT converters
# (refusing an existing output folder) and like the helper scripts, with the
# step config synth renders for the prod stack (GPT-J 6B at TP 2: consolidate,
# GPT-J converter, fp16 rewrite, verifier).

load helpers

setup() {
  common_setup
  stage_convert prod
}

# planned_runs <stack> <attempt> : the argv of each conversion phase the plan
# states, in the plan's order, one line each as the stub logs what runs in the
# image (%q-quoted): the placeholders become the attempt's staging folders.
planned_runs() {
  local line argv
  while IFS= read -r line; do
    IFS=$'\x1f' read -ra argv <<<"$line"
    argv=("${argv[@]//\{\{SRC\}\}/$SRC}")
    argv=("${argv[@]//\{\{OUT\}\}/$2/out}")
    argv=("${argv[@]//\{\{CONSOLIDATE_OUT\}\}/$2/consolidate}")
    argv=("${argv[@]//\{\{RELAYOUT_OUT\}\}/$2/relayout}")
    argv=("${argv[@]//\{\{SCRIPTS\}\}/$T/scripts}")
    printf '%q ' "${argv[@]}"
    echo
  done < <(plan_value "$1" conversion.phases | node -e '
    const phases = JSON.parse(require("fs").readFileSync(0, "utf8"));
    for (const p of Object.values(phases)) if (p.argv) console.log(p.argv.join("\x1f"));
  ')
}

# executed_runs : what convert.sh ran in the image, in order, in the same form.
executed_runs() {
  local line
  grep '^docker run ' "$STUB_LOG" | while IFS= read -r line; do
    echo "${line#* "$BASE_REF" } "
  done
}

@test "convert: runs consolidate, converter, fp16 and verifier in the image, then installs" {
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  attempt_glob="$WORK/tmp/convert-"
  assert_calls 1 docker "consolidate_checkpoint.py --input $SRC --output $attempt_glob"
  assert_calls 1 docker "huggingface_gptj_ckpt_convert.py --ckpt-dir $attempt_glob"
  assert_calls 1 docker "to_fp16.py"
  assert_calls 1 docker "verify_weights.py --expected $EXPECTED $attempt_glob"
  assert_calls 5 docker "$BASE_REF"
  assert_calls 4 docker "run --rm --gpus all --shm-size 8g --user $(id -u):$(id -g)"
  # Order: consolidate < convert < fp16 < verify.
  grep '^docker run' "$STUB_LOG" | grep -oE '[a-z0-9_]+\.py' | tr '\n' ' ' >"$BATS_TEST_TMPDIR/order"
  [ "$(cat "$BATS_TEST_TMPDIR/order")" = "consolidate_checkpoint.py huggingface_gptj_ckpt_convert.py to_fp16.py verify_weights.py " ]
  [ -f "$FT/2-gpu/config.ini" ]
  [ -f "$FT/2-gpu/.fp16" ]
  grep -q '^input_hash=' "$FT/.triton-ft-convert"
  [ -z "$(ls -A "$WORK/tmp")" ]
  assert_output_has "RESULT weights_dir=$FT/2-gpu"
}

@test "convert: same inputs skip" {
  run bash "$S/convert.sh" "$CFG"
  : >"$STUB_LOG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  assert_calls 0 docker
}

@test "convert: a new model revision (fetch stamp) re-runs the conversion" {
  run bash "$S/convert.sh" "$CFG"
  echo 'input_hash=def' >"$SRC/.triton-ft-fetch"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "inputs changed"
  assert_calls 2 docker "gptj_ckpt_convert"
}

@test "convert: after a converter failure the re-run keeps the consolidate phase and re-converts into a clean folder" {
  export STUB_FAIL_ONCE='docker:to_fp16.py'
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "failed in phase 'convert'"
  [ ! -e "$FT" ]
  [ ! -e "$WORK/state/convert.done" ]
  : >"$STUB_LOG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "phase consolidate already finished"
  assert_calls 0 docker "consolidate_checkpoint.py"
  # The stub converter refuses an existing <N>-gpu: it passing proves the
  # staging folder was cleared before the second conversion.
  assert_calls 1 docker "gptj_ckpt_convert"
  [ -f "$FT/2-gpu/.fp16" ]
}

@test "convert: an existing OUTPUT_DIR from an older conversion is replaced only after verification" {
  mkdir -p "$FT/2-gpu"
  echo old >"$FT/2-gpu/model.old.bin"
  export STUB_VERIFY_RC=1
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "incomplete or wrong (verify_weights.py); not installing it"
  [ -f "$FT/2-gpu/model.old.bin" ]
  export STUB_VERIFY_RC=0
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ ! -e "$FT/2-gpu/model.old.bin" ]
  [ -f "$FT/2-gpu/config.ini" ]
}

@test "convert: a converter that writes no <TP>-gpu folder fails clearly" {
  sed -i "s/'--n-inference-gpus' '2'/'--n-inference-gpus' '4'/" "$CFG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "wrote no $WORK/tmp/convert-"
}

@test "convert: codegen re-layout runs on the fetched checkpoint, before convert" {
  stage_convert codegen
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 docker "codegen_to_gptj.py --input $SRC --output $WORK/tmp/convert-"
  assert_calls 0 docker "consolidate_checkpoint.py"
  grep '^docker run' "$STUB_LOG" | grep -nE 'consolidate_checkpoint|codegen_to_gptj|gptj_ckpt_convert' | cut -d: -f1 | tr '\n' ' ' >"$BATS_TEST_TMPDIR/lines"
  [ "$(cat "$BATS_TEST_TMPDIR/lines")" = "1 2 " ]
}

@test "convert: refuses an image without a digest and a missing source" {
  sed -i "s|^IMAGE=.*|IMAGE='triton_with_ft:latest'|" "$CFG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "IMAGE must be digest-pinned"
  sed -i "s|^IMAGE=.*|IMAGE='$BASE_REF'|" "$CFG"
  rm -rf "$SRC"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "run the fetch step first"
}

@test "convert: too little disk fails before converting" {
  echo "REQUIRED_FREE_GIB='200'" >>"$CFG"
  export STUB_DF_AVAIL_KIB=$((50 * 1024 * 1024))
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "50 GiB free, 200 GiB required"
  assert_calls 0 docker run
}

@test "convert: CONFIG_INI is installed after the converter, before the fp16 rewrite, and is an input" {
  stage_convert gptj-jax
  ini=$(conf_array "$CFG" CONFIG_INI)
  [ -n "$ini" ]
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  # The planned [gptj] file is in place (the JAX converter writes none), and
  # the fp16 rewrite ran on it (the stub rewrites weight_data_type as the real
  # to_fp16.py does): the planned file with only that key changed.
  grep -qx 'weight_data_type = fp32' "$ini"
  diff <(sed 's/^weight_data_type = fp32$/weight_data_type = fp16/' "$ini") "$FT/$TP-gpu/config.ini"
  grep -qx 'head_num = 16' "$FT/$TP-gpu/config.ini"
  [ -f "$FT/$TP-gpu/.fp16" ]
  first=$(grep -o 'RESULT input_hash=.*' <<<"$output")
  sed -i 's/^head_num = 16$/head_num = 32/' "$ini"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ "$(grep -o 'RESULT input_hash=.*' <<<"$output")" != "$first" ]
  grep -qx 'head_num = 32' "$FT/$TP-gpu/config.ini"
}

@test "convert: executes exactly the plan's phases, in the plan's order, for every conversion shape" {
  # gpt2 (convert, verify), GPT-J (consolidate, convert, fp16, verify),
  # CodeGen (re-layout, convert, fp16, verify), the JAX archive (convert,
  # config.ini, fp16, verify).
  for stack in dev prod codegen gptj-jax; do
    rm -rf "$WORK"
    mkdir -p "$WORK"
    : >"$STUB_LOG"
    stage_convert "$stack"
    run bash "$S/convert.sh" "$CFG"
    [ "$status" -eq 0 ]
    hash=$(grep -o 'RESULT input_hash=.*' <<<"$output")
    hash=${hash#RESULT input_hash=}
    attempt=$WORK/tmp/convert-${hash:0:16}
    diff <(planned_runs "$stack" "$attempt") <(executed_runs) || {
      echo "stack $stack: convert.sh's commands (>) differ from the plan's phases (<)" >&2
      return 1
    }
    [ "$(planned_runs "$stack" "$attempt" | grep -c verify_weights.py)" = 1 ]
    if ini=$(conf_array "$CFG" CONFIG_INI) && [ -n "$ini" ]; then
      # As planned, then rewritten to fp16 when the plan has that phase.
      if grep -q to_fp16.py <(planned_runs "$stack" "$attempt"); then
        diff <(plan_value "$stack" conversion.phases.configIni.content | sed 's/^weight_data_type = .*/weight_data_type = fp16/') "$FT/$TP-gpu/config.ini"
      else
        diff <(plan_value "$stack" conversion.phases.configIni.content) "$FT/$TP-gpu/config.ini"
      fi
    fi
  done
}

@test "convert: SIGKILLed right after the converter wrote its output, the re-run keeps consolidate, re-converts cleanly and installs" {
  export STUB_KILL_ONCE_AFTER='docker:gptj_ckpt_convert'
  run_session bash "$S/convert.sh" "$CFG"
  assert_killed convert
  [ ! -e "$FT" ]
  # The half-done attempt is on disk: the consolidated checkpoint and the converter's output.
  ls -d "$WORK"/tmp/convert-*/out/2-gpu
  : >"$STUB_LOG"
  run_session bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "phase consolidate already finished"
  assert_calls 0 docker "consolidate_checkpoint.py"
  # The stub converter refuses an existing <N>-gpu: the killed run's output was cleared first.
  assert_calls 1 docker "gptj_ckpt_convert"
  assert_calls 1 docker "to_fp16.py"
  assert_calls 1 docker "verify_weights.py"
  grep -qx 'weight_data_type = fp16' "$FT/2-gpu/config.ini"
  grep -q '^input_hash=' "$FT/.triton-ft-convert"
  [ -z "$(ls -A "$WORK/tmp")" ]
  assert_output_has "RESULT weights_dir=$FT/2-gpu"
}
