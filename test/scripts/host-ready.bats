#!/usr/bin/env bats
# host-ready.sh under stubbed nvidia-smi, docker, aws, cloud-init, git, df,
# with the step config synth renders for the dev stack (one A10G, g5.xlarge).

load helpers

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/host-ready.env
  plan_conf dev host-ready >"$CFG"
  grep -qx "EXPECTED_GPU_NAME='A10G'" "$CFG"
  grep -qx "EXPECTED_GPU_COUNT='1'" "$CFG"
  # The plan's model-independent free-disk floor (model/sizing.ts HOST_READY_FREE_DISK_GIB).
  REQUIRED=$(sed -n "s/^REQUIRED_FREE_GIB='\([0-9]*\)'$/\1/p" "$CFG")
  [ "$REQUIRED" -gt 20 ]
}

@test "host-ready: happy path checks GPU, docker runtime, disk and logs in to ECR" {
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT gpu_count=1"
  assert_output_has "RESULT gpu_name=NVIDIA A10G"
  assert_output_has "phase: cloud-init"
  assert_calls 1 cloud-init "status --wait"
  assert_calls 1 aws "ecr get-login-password --region us-east-1"
  assert_calls 1 docker "login --username AWS --password-stdin 123456789012.dkr.ecr.us-east-1.amazonaws.com"
  # Timestamped phase lines.
  [[ $output =~ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z\ \[host-ready\]\ ==\>\ phase:\ gpu ]]
  grep -q '^input_hash=' "$WORK/state/host-ready.done"
  # The ECR password travels on stdin, never as an argument.
  refute grep -q 'stub-ecr-password' "$STUB_LOG"
}

@test "host-ready: second run with the same config is skipped and re-prints results" {
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  assert_output_has "RESULT gpu_count=1"
  assert_calls 1 nvidia-smi
  assert_calls 1 aws
}

@test "host-ready: a changed config runs again" {
  run bash "$S/host-ready.sh" "$CFG"
  echo "REQUIRED_FREE_GIB='120'" >>"$CFG"
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "inputs changed"
  assert_calls 2 nvidia-smi
}

@test "host-ready: no GPU fails clearly" {
  export STUB_GPUS=none
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "ERROR: no GPU"
  [ ! -e "$WORK/state/host-ready.done" ]
}

@test "host-ready: missing nvidia-smi fails clearly" {
  rm "$BATS_TEST_TMPDIR/bin/nvidia-smi"
  # Hide any real nvidia-smi of the machine running the tests.
  PATH="$BATS_TEST_TMPDIR/bin:/usr/bin:/bin" run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "no GPU: nvidia-smi not found"
}

@test "host-ready: wrong GPU model and too few GPUs fail clearly" {
  export STUB_GPUS='Tesla T4'
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "wrong GPU model: found 'Tesla T4'"
  export STUB_GPUS='NVIDIA A10G'
  echo "EXPECTED_GPU_COUNT='4'" >>"$CFG"
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "too few GPUs: found 1, need 4"
}

@test "host-ready: the GPU name matches as a whole word (an L40S is not an L4)" {
  sed -i "s/^EXPECTED_GPU_NAME=.*/EXPECTED_GPU_NAME='NVIDIA L4'/" "$CFG"
  export STUB_GPUS='NVIDIA L40S'
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "wrong GPU model: found 'NVIDIA L40S'"
  export STUB_GPUS='NVIDIA L4'
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  sed -i "s/^EXPECTED_GPU_NAME=.*/EXPECTED_GPU_NAME='A100-SXM4-40GB'/" "$CFG"
  export STUB_GPUS='NVIDIA A100-SXM4-40GB'
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
}

@test "host-ready: too little disk fails clearly" {
  export STUB_DF_AVAIL_KIB=$((20 * 1024 * 1024))
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "not enough free disk"
  assert_output_has "20 GiB free, $REQUIRED GiB required"
  [ ! -e "$WORK/state/host-ready.done" ]
}

@test "host-ready: docker without the NVIDIA runtime fails clearly" {
  export STUB_DOCKER_RUNTIMES='{"runc":{}}'
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "Docker has no NVIDIA runtime"
}

@test "host-ready: cloud-init error fails, recoverable status continues" {
  export STUB_CLOUD_INIT_RC=1
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "cloud-init reported an error"
  export STUB_CLOUD_INIT_RC=2
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "recoverable errors"
}

@test "host-ready: installs git-lfs when missing" {
  export STUB_GIT_LFS=missing
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 1 apt-get "install -y -q git-lfs"
}

@test "host-ready: resumes after a failed ECR login" {
  export STUB_FAIL_ALWAYS='aws:get-login-password'
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "docker login to 123456789012.dkr.ecr.us-east-1.amazonaws.com failed"
  [ ! -e "$WORK/state/host-ready.done" ]
  unset STUB_FAIL_ALWAYS
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  [ -e "$WORK/state/host-ready.done" ]
}

@test "host-ready: missing config variable and missing config file are reported" {
  run bash "$S/host-ready.sh" "$BATS_TEST_TMPDIR/nope.env"
  [ "$status" -ne 0 ]
  assert_output_has "step config not found"
  printf "WORK_ROOT='%s'\nAWS_REGION='us-east-1'\n" "$WORK" >"$CFG"
  run bash "$S/host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "does not set required variable ECR_REGISTRY"
}

@test "host-ready: SIGKILLed mid-step (docker phase), the re-run checks everything and completes" {
  export STUB_KILL_ONCE='docker:info'
  run_session bash "$S/host-ready.sh" "$CFG"
  assert_killed host-ready
  assert_output_has "phase: docker"
  refute grep -q 'login' "$STUB_LOG"
  : >"$STUB_LOG"
  run_session bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  # Nothing of a half-finished check is trusted: every check runs again.
  assert_calls 1 nvidia-smi
  assert_calls 1 docker "login"
  assert_output_has "RESULT gpu_count=1"
  grep -q '^input_hash=' "$WORK/state/host-ready.done"
}
