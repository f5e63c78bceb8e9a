#!/usr/bin/env bats
# gemm.sh under a stubbed docker whose gpt_gemm writes gemm_config.in.

load helpers

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/gemm.env
  cat >"$CFG" <<CONF
WORK_ROOT='$WORK'
IMAGE='$BASE_REF'
AWS_REGION='us-east-1'
GEMM_ARGV=('8' '1' '32' '16' '256' '16384' '64512' '1' '1')
GEMM_OUTPUT='$WORK/build/gemm_config.in'
CONF
}

@test "gemm: runs the image's gpt_gemm on one GPU in a scratch folder and keeps the result" {
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 docker "run --rm --gpus device=0"
  assert_calls 1 docker "$BASE_REF /usr/local/bin/gpt_gemm 8 1 32 16 256 16384 64512 1 1"
  assert_calls 1 docker "-w $WORK/tmp/gemm-"
  [ -s "$WORK/build/gemm_config.in" ]
  grep -q '64512' "$WORK/build/gemm_config.in"
  assert_output_has "RESULT gemm_config=$WORK/build/gemm_config.in"
  [ -z "$(ls -A "$WORK/tmp")" ]
}

@test "gemm: same inputs skip, changed arguments re-run" {
  run bash "$S/gemm.sh" "$CFG"
  run bash "$S/gemm.sh" "$CFG"
  assert_output_has "skipping"
  assert_calls 1 docker "gpt_gemm"
  sed -i "s/'64512'/'50400'/" "$CFG"
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 2 docker "gpt_gemm"
  grep -q '50400' "$WORK/build/gemm_config.in"
}

@test "gemm: fails clearly when gpt_gemm produces no gemm_config.in, then resumes" {
  export STUB_GEMM_NO_OUTPUT=1
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "gpt_gemm exited without producing"
  [ ! -e "$WORK/build/gemm_config.in" ]
  [ ! -e "$WORK/state/gemm.done" ]
  unset STUB_GEMM_NO_OUTPUT
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ -s "$WORK/build/gemm_config.in" ]
}

@test "gemm: a gpt_gemm crash is reported with its arguments" {
  export STUB_FAIL_ALWAYS='docker:gpt_gemm'
  run bash "$S/gemm.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "gpt_gemm failed (arguments: 8 1 32 16 256 16384 64512 1 1)"
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
