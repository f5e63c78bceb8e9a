#!/usr/bin/env bats
# measure-step.sh, the timer every step command runs under (infra/plan/stepGraph.ts
# stepCommand): around the real host-ready step with the dev stack's config
# (stubbed GPU, Docker and AWS tools), and around small stand-in steps where
# the test needs control over time, markers or network counters.

load helpers

setup() {
  common_setup
  CFG=$BATS_TEST_TMPDIR/host-ready.env
  plan_conf dev host-ready >"$CFG"
  MARKER=$WORK/state/host-ready.done
  RECORD=$MARKER.measured
}

# field <name> : a field of the host-ready record.
field() { sed -n "s/^$1=//p" "$RECORD"; }

@test "measure-step: the plan's command line times the real step and records it beside its marker" {
  local cmd
  # plan_value moves the scripts and steps folders under the work root; the state folder stays.
  cmd=$(plan_value dev "buildSteps.0.command")
  [ "$cmd" = "bash $WORK/scripts/remote/measure-step.sh /opt/triton-ft/state/host-ready.done bash $WORK/scripts/remote/host-ready.sh $WORK/steps/host-ready.conf" ]
  # The same command on this test's copies: the scripts, the state folder, the config.
  cmd=${cmd//$WORK\/scripts/$T/scripts}
  cmd=${cmd//\/opt\/triton-ft\/state/$WORK/state}
  cmd=${cmd//$WORK\/steps\/host-ready.conf/$CFG}
  run bash -c "$cmd"
  [ "$status" -eq 0 ]
  assert_output_has "RESULT gpu_count=1"
  [[ $output =~ RESULT\ step_seconds=[0-9]+ ]]
  [[ $output =~ RESULT\ step_net_bytes=[0-9]+ ]]
  [[ $output =~ RESULT\ step_measured_at=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z ]]
  # The record belongs to the inputs the marker records.
  [ "$(field input_hash)" = "$(sed -n 's/^input_hash=//p' "$MARKER")" ]
  [[ $(field seconds) =~ ^[0-9]+$ ]]
}

@test "measure-step: a skipped re-run keeps the recorded time of the run that did the work" {
  run bash "$S/measure-step.sh" "$MARKER" bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  # As if that run had taken 71 minutes.
  sed -i 's/^seconds=.*/seconds=4260/' "$RECORD"
  local record_before
  record_before=$(cat "$RECORD")
  run bash "$S/measure-step.sh" "$MARKER" bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  assert_output_has "RESULT gpu_count=1"
  assert_output_has "RESULT step_seconds=4260"
  [ "$(cat "$RECORD")" = "$record_before" ]
}

@test "measure-step: a run with other inputs replaces the record" {
  run bash "$S/measure-step.sh" "$MARKER" bash "$S/host-ready.sh" "$CFG"
  local first
  first=$(field input_hash)
  sed -i 's/^seconds=.*/seconds=4260/' "$RECORD"
  echo "REQUIRED_FREE_GIB='120'" >>"$CFG"
  run bash "$S/measure-step.sh" "$MARKER" bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "inputs changed"
  [ "$(field input_hash)" != "$first" ]
  [ "$(field input_hash)" = "$(sed -n 's/^input_hash=//p' "$MARKER")" ]
  refute grep -qx 'seconds=4260' "$RECORD"
}

@test "measure-step: a record of other inputs than the marker's is never printed" {
  run bash "$S/measure-step.sh" "$MARKER" bash "$S/host-ready.sh" "$CFG"
  sed -i "s/^input_hash=.*/input_hash=$(printf other | sha256sum | cut -d' ' -f1)/" "$RECORD"
  run bash "$S/measure-step.sh" "$MARKER" bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  refute grep -q '^RESULT step_' <<<"$output"
}

@test "measure-step: a failed step records nothing and keeps its exit status" {
  export STUB_GPUS=none
  run bash "$S/host-ready.sh" "$CFG"
  local direct=$status
  [ "$direct" -ne 0 ]
  run bash "$S/measure-step.sh" "$MARKER" bash "$S/host-ready.sh" "$CFG"
  [ "$status" -eq "$direct" ]
  assert_output_has "ERROR: no GPU"
  [ ! -e "$RECORD" ]
  refute grep -q '^RESULT step_' <<<"$output"
}

# A stand-in step: sleeps, writes its marker, moves the network counters.
fake_step() {
  cat >"$T/fake-step.sh" <<'EOF'
set -eu
"$REAL_SLEEP" "$1"
mkdir -p "$(dirname "$MARKER")"
printf 'input_hash=%s\nfinished=now\n' "$(printf fake | sha256sum | cut -d' ' -f1)" >"$MARKER"
if [[ -n ${NET_AFTER:-} ]]; then cp "$NET_AFTER" "$MEASURE_NET_DEV"; fi
echo "RESULT done=yes"
EOF
}

net_dev() { # <lo bytes> <eth0 rx> <eth0 tx> <ens5 rx> <ens5 tx>
  printf 'Inter-|   Receive                                                |  Transmit\n'
  printf ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n'
  printf '    lo: %s 1 0 0 0 0 0 0 %s 1 0 0 0 0 0 0\n' "$1" "$1"
  printf '  eth0: %s 10 0 0 0 0 0 0 %s 10 0 0 0 0 0 0\n' "$2" "$3"
  printf '  ens5:%s 10 0 0 0 0 0 0 %s 10 0 0 0 0 0 0\n' "$4" "$5"
}

@test "measure-step: seconds are the run's wall-clock time, bytes what the interfaces but loopback moved" {
  fake_step
  REAL_SLEEP=$(PATH=$REAL_PATH command -v sleep)
  export REAL_SLEEP MARKER
  export MEASURE_NET_DEV=$T/net-dev NET_AFTER=$T/net-dev-after
  net_dev 100 1000 2000 50 60 >"$MEASURE_NET_DEV"
  # 3 GB received on eth0 (past 2^31: no 32-bit arithmetic), 5 MB sent, ens5 40 + 40, loopback ignored.
  net_dev 999999 3000001000 5002000 90 100 >"$NET_AFTER"
  run bash "$S/measure-step.sh" "$MARKER" bash "$T/fake-step.sh" 2
  [ "$status" -eq 0 ]
  assert_output_has "RESULT done=yes"
  local seconds
  seconds=$(field seconds)
  [ "$seconds" -ge 2 ]
  [ "$seconds" -le 10 ]
  [ "$(field net_bytes)" = "$((3000000000 + 5000000 + 80))" ]
  assert_output_has "RESULT step_net_bytes=$((3000000000 + 5000000 + 80))"
}

@test "measure-step: a command that keeps no marker prints no measurement" {
  run bash "$S/measure-step.sh" "$MARKER" bash -c 'echo "RESULT x=1"'
  [ "$status" -eq 0 ]
  [ "$output" = "RESULT x=1" ]
  [ ! -e "$RECORD" ]
}

@test "measure-step: refuses a marker path that is not an absolute .done file" {
  run bash "$S/measure-step.sh" state/host-ready.done true
  [ "$status" -eq 2 ]
  assert_output_has "absolute path ending in .done"
  run bash "$S/measure-step.sh" "$MARKER"
  [ "$status" -eq 2 ]
  assert_output_has "usage:"
}
