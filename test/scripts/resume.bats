#!/usr/bin/env bats
# Resume and rebuild correctness on a builder: the convert hash covers exactly
# the shipped helper files (never __pycache__, always the helpers they import),
# one run of a step at a time, and no stray copy of the weights after an
# interrupted swap.

load helpers

setup() {
  common_setup
  # The prod stack's conversion (GPT-J: consolidate, converter, fp16 rewrite,
  # verifier), with the helpers it ships (hf_checkpoint.py among them).
  stage_convert prod
  CONVERTER=$(basename "$(plan_value prod conversion.converter)")
}

# Runs the shipped helpers for real, as they run in the container: importing
# them writes bytecode into the scripts folder unless told not to.
run_helpers_for_real() {
  (cd "$T/scripts/convert" && env -u PYTHONDONTWRITEBYTECODE python3 -c 'import hf_checkpoint, verify_weights')
}

@test "resume: bytecode the helpers write does not change the convert hash" {
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  run_helpers_for_real
  [ -n "$(find "$T/scripts/convert" -name '*.pyc')" ]
  : >"$STUB_LOG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "skipping"
  assert_calls 0 docker
}

@test "resume: a failed run's retry keeps its finished consolidate phase although bytecode appeared" {
  export STUB_FAIL_ONCE="docker:$CONVERTER"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  run_helpers_for_real
  : >"$STUB_LOG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "phase consolidate already finished in this attempt"
  assert_calls 0 docker consolidate_checkpoint.py
}

@test "resume: editing an imported helper (hf_checkpoint.py) re-runs the conversion" {
  conf_array "$CFG" CONVERT_HELPERS | grep -qx scripts/convert/hf_checkpoint.py
  run bash "$S/convert.sh" "$CFG"
  echo "# fixed" >>"$T/scripts/convert/hf_checkpoint.py"
  : >"$STUB_LOG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_output_has "inputs changed since the last run"
  assert_calls 1 docker consolidate_checkpoint.py
}

@test "resume: containers run without writing bytecode, with the scripts read-only" {
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -eq 0 ]
  assert_calls 4 docker "-e PYTHONDONTWRITEBYTECODE=1"
  assert_calls 4 docker "-v $T/scripts:$T/scripts:ro"
}

@test "resume: CONVERT_HELPERS must name the shipped helpers" {
  sed -i '/^CONVERT_HELPERS=/d' "$CFG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "CONVERT_HELPERS is empty"
  echo "CONVERT_HELPERS=(scripts/convert/nope.py)" >>"$CFG"
  run bash "$S/convert.sh" "$CFG"
  [ "$status" -ne 0 ]
  assert_output_has "input to hash does not exist"
}

@test "lock: a second run of a step waits for the first, then skips" {
  mkdir -p "$WORK/state"
  # Another run holds the step lock for a moment; record whether anything ran meanwhile.
  (
    flock 9
    touch "$T/held"
    /bin/sleep 2
    grep -c '^docker' "$STUB_LOG" >"$T/docker-calls-while-held" || true
  ) 9>>"$WORK/state/convert.lock" &
  holder=$!
  while [ ! -e "$T/held" ]; do /bin/sleep 0.05; done
  run bash "$S/convert.sh" "$CFG"
  wait "$holder"
  [ "$status" -eq 0 ]
  assert_output_has "another run of step convert holds $WORK/state/convert.lock; waiting"
  [ "$(cat "$T/docker-calls-while-held")" = 0 ]
  assert_calls 4 docker run
}

@test "swap: leftovers of interrupted swaps (old-style .old.<pid> too) are removed by the next one" {
  source "$S/lib.sh"
  mkdir -p "$T/final" "$T/final.old" "$T/final.old.12345" "$T/staged"
  echo new >"$T/staged/f"
  replace_dir "$T/staged" "$T/final"
  [ "$(cat "$T/final/f")" = new ]
  [ -z "$(find "$T" -maxdepth 1 -name 'final.old*')" ]
}

@test "swap: a TERM between the two renames puts the old folder back and leaves no copy" {
  mkdir -p "$T/final" "$T/staged"
  echo old >"$T/final/f"
  echo new >"$T/staged/f"
  # The second rename (staged -> final) is where the signal lands.
  run bash -c '
    source "$1/lib.sh"
    staged=$2
    mv() { if [[ $1 == "$staged" ]]; then kill -TERM $$; fi; command mv "$@"; }
    replace_dir "$2" "$3"
  ' _ "$S" "$T/staged" "$T/final"
  [ "$status" -eq 130 ]
  assert_output_has "interrupted while swapping $T/final in"
  [ "$(cat "$T/final/f")" = old ]
  [ -z "$(find "$T" -maxdepth 1 -name 'final.old*')" ]
}

@test "hash: folders hash without bytecode and cache folders, as the Pulumi side does" {
  source "$S/lib.sh"
  mkdir -p "$T/tree/sub"
  echo a >"$T/tree/a.py"
  echo b >"$T/tree/sub/b.py"
  before=$(hash_files "$T/tree")
  mkdir -p "$T/tree/__pycache__" "$T/tree/sub/.pytest_cache"
  echo x >"$T/tree/__pycache__/a.cpython-310.pyc"
  echo y >"$T/tree/sub/b.pyc"
  echo z >"$T/tree/sub/.pytest_cache/v"
  echo w >"$T/tree/a.py~"
  [ "$(hash_files "$T/tree")" = "$before" ]
  echo c >>"$T/tree/sub/b.py"
  [ "$(hash_files "$T/tree")" != "$before" ]
}
