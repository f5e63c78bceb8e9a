#!/usr/bin/env bats
# compile-host-ready.sh under stubbed cloud-init, docker, git, aws and df: the
# CPU compile host's check before the triton-with-ft step (no GPU checked).

load helpers

setup() {
  common_setup
}

@test "compile-host-ready: waits for cloud-init, checks Docker and the free disk, needs no GPU" {
  run bash "$S/compile-host-ready.sh" "$WORK" 60
  [ "$status" -eq 0 ]
  assert_output_has "phase: cloud-init"
  assert_output_has "docker is up"
  assert_output_has "RESULT free_gib=1024"
  assert_calls 1 cloud-init "status --wait"
  assert_calls 0 nvidia-smi
}

@test "compile-host-ready: a Docker daemon that does not answer fails clearly" {
  export STUB_DOCKER_INFO_RC=1
  run bash "$S/compile-host-ready.sh" "$WORK" 60
  [ "$status" -ne 0 ]
  assert_output_has "cannot talk to the Docker daemon"
  refute grep -q '^RESULT ' <<<"$output"
}

@test "compile-host-ready: too little disk fails clearly" {
  export STUB_DF_AVAIL_KIB=$((20 * 1024 * 1024))
  run bash "$S/compile-host-ready.sh" "$WORK" 60
  [ "$status" -ne 0 ]
  assert_output_has "20 GiB free, 60 GiB required"
}

@test "compile-host-ready: refuses a relative work root and a non-numeric size" {
  run bash "$S/compile-host-ready.sh" work 60
  [ "$status" -ne 0 ]
  assert_output_has "work root must be an absolute path"
  run bash "$S/compile-host-ready.sh" "$WORK" lots
  [ "$status" -ne 0 ]
  assert_output_has "required free GiB must be a whole number"
}
