#!/usr/bin/env bats
# gemm.sh under a stubbed docker whose gpt_gemm writes gemm_config.in, with
# the step config synth renders for the dev stack (GPT-2 on one A10G).

load helpers

GEMM_BIN=/workspace/build/fastertransformer_backend/build/bin/gpt_gemm
DEV_ARGS="8 1 512 12 64 3072 50257 1 1"

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/gemm.env
  plan_conf dev gemm >"$CFG"
  OUT=$WORK/work/gpt2/gemm/gemm_config.in
}

@test "gemm: runs the image's gpt_gemm on one GPU in a scratch folder and keeps the result" {
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 docker "run --rm --gpus device=0"
  assert_calls 1 docker "$BASE_REF $GEMM_BIN $DEV_ARGS"
  assert_calls 1 docker "-w $WORK/tmp/gemm-"
  [ -s "$OUT" ]
  grep -q '50257' "$OUT"
  assert_output_has "RESULT gemm_config=$OUT"
  [ -z "$(ls -A "$WORK/tmp")" ]
}

@test "gemm: same inputs skip, changed arguments re-run" {
  run bash "$S/gemm.sh" "$CFG"
  run bash "$S/gemm.sh" "$CFG"
  assert_output_has "skipping"
  assert_calls 1 docker "gpt_gemm"
  sed -i "s/'50257'/'50400'/" "$CFG"
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 2 docker "gpt_gemm"
  grep -q '50400' "$OUT"
}

@test "gemm: fails clearly when gpt_gemm produces no gemm_config.in, then resumes" {
  export STUB_GEMM_NO_OUTPUT=1
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "gpt_gemm exited without producing"
  [ ! -e "$OUT" ]
  [ ! -e "$WORK/state/gemm.done" ]
  unset STUB_GEMM_NO_OUTPUT
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ -s "$OUT" ]
}

@test "gemm: a gpt_gemm crash is reported with its arguments" {
  export STUB_FAIL_ALWAYS='docker:gpt_gemm'
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "gpt_gemm failed (arguments: $DEV_ARGS)"
}

@test "gemm: rejects malformed argument lists" {
  sed -i "s/^GEMM_ARGV=.*/GEMM_ARGV=('8' '1' '32')/" "$CFG"
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "GEMM_ARGV must hold 9 or 10"
  sed -i "s/^GEMM_ARGV=.*/GEMM_ARGV=('8' '1' '32' '16' '256' '16384' '64512' '1' '3')/" "$CFG"
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "head_num 16 is not divisible by tp 3"
  assert_calls 0 docker
}

@test "gemm: SIGKILLed once gpt_gemm wrote its file, the re-run tunes again and installs" {
  export STUB_KILL_ONCE_AFTER="docker:$GEMM_BIN"
  run_session bash "$S/gemm.sh" "$CFG"
  assert_killed gemm
  [ ! -e "$OUT" ]
  # The killed run's file stays in its scratch folder, never at GEMM_OUTPUT.
  ls "$WORK"/tmp/gemm-*/gemm_config.in
  run_session bash "$S/gemm.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 2 docker "$BASE_REF $GEMM_BIN $DEV_ARGS"
  [ -s "$OUT" ]
  grep -q '50257' "$OUT"
  [ -z "$(ls -A "$WORK/tmp")" ]
  assert_output_has "RESULT gemm_config=$OUT"
  grep -q '^input_hash=' "$WORK/state/gemm.done"
}
