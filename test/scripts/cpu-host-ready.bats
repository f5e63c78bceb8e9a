#!/usr/bin/env bats
# cpu-host-ready.sh (a vLLM-only stack's host-ready, infra/plan/cpuBuilder.ts)
# under stubbed docker, aws, cloud-init, git and df, with the step config synth
# renders for the CodeGen-on-vLLM script stack: no GPU, no nvidia-smi, no NVIDIA
# runtime, and the rest of the GPU builder's checks.

load helpers

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/host-ready.env
  plan_conf codegen-vllm host-ready >"$CFG"
  # The CPU builder's config: no GPU to expect.
  refute grep -q '^EXPECTED_GPU' "$CFG"
  # The plan's model-independent floor (model/sizing.ts CPU_HOST_READY_FREE_DISK_GIB).
  REQUIRED=$(sed -n "s/^REQUIRED_FREE_GIB='\([0-9]*\)'$/\1/p" "$CFG")
  [ "$REQUIRED" -gt 20 ]
}

@test "cpu-host-ready: the vLLM-only stack's host-ready step runs this script" {
  run plan_value codegen-vllm buildSteps
  [ "$status" -eq 0 ]
  [[ $output == *'"script": "scripts/remote/cpu-host-ready.sh"'* ]]
  [[ $output != *'"script": "scripts/remote/host-ready.sh"'* ]]
}

@test "cpu-host-ready: a host without any GPU passes: cloud-init, Docker, disk, ECR login; nvidia-smi never called" {
  rm "$BATS_TEST_TMPDIR/bin/nvidia-smi"
  # Hide any real nvidia-smi of the machine running the tests.
  PATH="$BATS_TEST_TMPDIR/bin:/usr/bin:/bin" run bash "$S/cpu-host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT gpu_count=0"
  assert_output_has "docker is up (CPU builder: no GPU needed)"
  assert_calls 1 cloud-init "status --wait"
  assert_calls 1 aws "ecr get-login-password --region us-east-1"
  assert_calls 1 docker "login --username AWS --password-stdin 123456789012.dkr.ecr.us-east-1.amazonaws.com"
  grep -q '^input_hash=' "$WORK/state/host-ready.done"
  refute grep -q 'stub-ecr-password' "$STUB_LOG"
}

@test "cpu-host-ready: Docker without the NVIDIA runtime is fine on a CPU builder" {
  export STUB_DOCKER_RUNTIMES='{"runc":{}}'
  export STUB_GPUS=none
  run bash "$S/cpu-host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 0 nvidia-smi
}

@test "cpu-host-ready: second run with the same config is skipped and re-prints results" {
  run bash "$S/cpu-host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  run bash "$S/cpu-host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  assert_output_has "RESULT gpu_count=0"
  assert_calls 1 aws
}

@test "cpu-host-ready: a Docker daemon that does not answer fails clearly" {
  export STUB_DOCKER_INFO_RC=1
  run bash "$S/cpu-host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "cannot talk to the Docker daemon"
  [ ! -e "$WORK/state/host-ready.done" ]
}

@test "cpu-host-ready: too little disk fails clearly" {
  export STUB_DF_AVAIL_KIB=$((20 * 1024 * 1024))
  run bash "$S/cpu-host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "20 GiB free, $REQUIRED GiB required"
  [ ! -e "$WORK/state/host-ready.done" ]
}

@test "cpu-host-ready: cloud-init error fails, recoverable status continues" {
  export STUB_CLOUD_INIT_RC=1
  run bash "$S/cpu-host-ready.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "cloud-init reported an error"
  export STUB_CLOUD_INIT_RC=2
  run bash "$S/cpu-host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
}
