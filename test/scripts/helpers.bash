# shellcheck shell=bash
# Shared setup for the remote-step bats tests: a private work root, a copy of
# the scripts tree, and stub tools on PATH that log their argv.

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export REPO_ROOT

STUB_TOOLS=(docker git aws nvidia-smi cloud-init huggingface-cli curl df sleep sudo apt-get fake-python)

# A valid-looking digest-pinned image and the secret the fetch tests use.
BASE_REF="123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-test-triton-with-ft@sha256:$(printf 'base' | sha256sum | cut -d' ' -f1)"
HF_SECRET="hf_s3cr3tT0kenValue_do_not_leak"
export BASE_REF HF_SECRET

common_setup() {
  T=$BATS_TEST_TMPDIR
  export WORK=$T/work
  export STUB_LOG=$T/calls.log
  export STUB_STATE=$T/stub-state
  mkdir -p "$WORK" "$T/bin" "$STUB_STATE"
  : >"$STUB_LOG"
  # Run a copy of the scripts so tests can add files next to them freely.
  mkdir -p "$T/scripts"
  cp -a "$REPO_ROOT/scripts/remote" "$T/scripts/remote"
  cp -a "$REPO_ROOT/scripts/convert" "$T/scripts/convert"
  # shellcheck disable=SC2034 # read by the .bats files
  S=$T/scripts/remote
  local t
  for t in "${STUB_TOOLS[@]}"; do
    ln -s "$REPO_ROOT/test/scripts/stubs/stub.sh" "$T/bin/$t"
  done
  # synth runs with the real tools (it lists the tracked files with git).
  export REAL_PATH=${REAL_PATH:-$PATH}
  export PATH="$T/bin:$PATH"
  unset HF_TOKEN STUB_FAIL_ONCE STUB_FAIL_ALWAYS STUB_GPUS STUB_DF_AVAIL_KIB STUB_GIT_LFS
  unset STUB_KILL_ONCE STUB_KILL_ONCE_AFTER STUB_DELAY STUB_DELAY_SECONDS
  # bats' own process group: a stub never SIGKILLs it (stub.sh kill_step).
  STUB_BATS_PGID=$(ps -o pgid= -p $$ | tr -d ' ')
  export STUB_BATS_PGID
}

# run_session <cmd...> : bats' `run`, with cmd in a session and process group
# of its own, as a step runs on the builder under its SSH session; a stub's
# STUB_KILL_ONCE / STUB_KILL_ONCE_AFTER SIGKILLs that whole group.
run_session() {
  run setsid --wait "$@"
}

# assert_killed <step> : the last run_session ended by SIGKILL (exit 137)
# with no marker for the step and no RESULT line.
assert_killed() {
  # shellcheck disable=SC2154 # $status and $output are set by bats' run
  if [[ $status -ne 137 ]]; then
    echo "expected the step to be SIGKILLed (exit 137), got $status:" >&2
    echo "$output" >&2
    return 1
  fi
  # Killed by the stub, not by anything else (the record is per kill).
  [[ -s $STUB_STATE/killed ]]
  rm -f "$STUB_STATE/killed"
  [[ ! -e $WORK/state/$1.done ]]
  refute grep -q '^RESULT ' <<<"$output"
}

# calls <tool> [substring] : number of logged calls of tool whose logged
# (%q-quoted) argv contains substring literally.
calls() {
  local n
  n=$(grep -- "^$1\( \|\$\)" "$STUB_LOG" | grep -cF -- "${2:-}" || true)
  echo "${n:-0}"
}

# assert_calls <expected> <tool> [substring]
assert_calls() {
  local want=$1 got
  shift
  got=$(calls "$@")
  if [[ $got != "$want" ]]; then
    echo "expected $want call(s) of '$*', got $got; log:" >&2
    cat "$STUB_LOG" >&2
    return 1
  fi
}

# assert_output_has <substring> : checks bats' $output.
assert_output_has() {
  # shellcheck disable=SC2154 # $output is set by bats' run
  if [[ $output != *"$1"* ]]; then
    echo "output lacks '$1':" >&2
    echo "$output" >&2
    return 1
  fi
}

marker_of() { cat "$WORK/state/$1.done"; }

# Test values of the deploy-time placeholders synth leaves in step configs.
TEST_REGISTRY=123456789012.dkr.ecr.us-east-1.amazonaws.com

# Script-test stacks: test/scripts/stacks/<stack>.stack.yaml, stack files
# for cases the committed stacks do not have (an archive source). They are not
# named Pulumi.<stack>.yaml, so the suites that cover every deployable stack
# file (policy pack, k8s) do not pick them up; synth reads a copy.
TEST_STACKS_DIR=$REPO_ROOT/test/scripts/stacks

# synth_out <stack> : prints the folder `npm run synth` rendered for a
# committed stack (Pulumi.<stack>.yaml) or a script-test stack. Rendered once
# per bats run into $BATS_RUN_TMPDIR (or taken from $SYNTH_DIR).
synth_out() {
  local stack=$1 dir=${SYNTH_DIR:-$BATS_RUN_TMPDIR/synth} cwd=$REPO_ROOT
  if [[ ! -f $dir/$stack/plan.json ]]; then
    if [[ -f $TEST_STACKS_DIR/$stack.stack.yaml ]]; then
      cwd=$dir/stack-files
      mkdir -p "$cwd"
      cp "$TEST_STACKS_DIR/$stack.stack.yaml" "$cwd/Pulumi.$stack.yaml"
    fi
    mkdir -p "$dir"
    rm -rf "$dir/$stack.partial"
    # Its warnings (documentation CIDRs) are the stacks' own; shown only when synth fails.
    (cd "$cwd" && PATH=$REAL_PATH node "$REPO_ROOT/node_modules/tsx/dist/cli.mjs" "$REPO_ROOT/scripts/synth.ts" \
      --stack "$stack" --out "$dir/$stack.partial" >/dev/null 2>"$dir/$stack.stderr") \
      || { cat "$dir/$stack.stderr" >&2; echo "synth --stack $stack failed" >&2; return 1; }
    mv "$dir/$stack.partial" "$dir/$stack"
  fi
  printf '%s\n' "$dir/$stack"
}

# to_work : moves the builder's paths in stdin under this test's work root:
# /opt/triton-ft (work/, plan/, images/, scripts/, steps/) becomes $WORK, and
# the deploy-time values (`@{name}`) get the test's region, registry and base
# image. /opt/triton-ft/{weights,model-repository,tokenizer} are server-image
# paths and stay.
to_work() {
  sed -e "s#'/opt/triton-ft'#'$WORK'#g" \
    -e "s#/opt/triton-ft\$#$WORK#g" \
    -e "s#/opt/triton-ft/\(work\|plan\|images\|scripts\|steps\)\([/'\"]\|\$\)#$WORK/\1\2#g" \
    -e "s#@{awsRegion}#us-east-1#g" \
    -e "s#@{ecrRegistry}#$TEST_REGISTRY#g" \
    -e "s#@{tritonWithFtImage}#$BASE_REF#g" \
    -e "s#@{tritonWithFtRepositoryUrl}#$TEST_REGISTRY/triton-ft-test/triton_with_ft#g" \
    -e "s#@{serverRepositoryUrl}#$TEST_REGISTRY/triton-ft-test/server#g" \
    -e "s#@{gatewayRepositoryUrl}#$TEST_REGISTRY/triton-ft-test/gateway#g"
}

# plan_conf <stack> <step> : the step config synth renders for the stack,
# moved under this test's work root (to_work).
plan_conf() {
  local out
  out=$(synth_out "$1") || return 1
  to_work <"$out/steps/$2.conf"
}

# plan_value <stack> <dotted.path> : a value of the stack's plan.json (a
# string as is, anything else as JSON), moved under the work root (to_work).
plan_value() {
  local out
  out=$(synth_out "$1") || return 1
  # shellcheck disable=SC2016 # JavaScript, not shell
  node -e '
    const plan = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const v = process.argv[2].split(".").reduce((o, k) => (o == null ? undefined : o[k]), plan);
    if (v === undefined) { console.error(`plan.json has no ${process.argv[2]}`); process.exit(1); }
    process.stdout.write(typeof v === "string" ? v : JSON.stringify(v, null, 2) + "\n");
  ' "$out/plan.json" "$2" | to_work
}

# conf_array <config-file> <NAME> : the elements of an array (or a string) the
# step config sets, one a line.
conf_array() {
  (
    # shellcheck source=/dev/null
    source "$1"
    local -n _v=$2
    printf '%s\n' "${_v[@]}"
  )
}

# stage_convert <stack> : the stack's convert config in $CFG, and what the
# earlier steps leave on the builder for it: the fetched checkpoint in
# SOURCE_DIR (a config.json and the fetch stamp) and the files the plan ships
# (the expected weight lists, the planned config.ini). Sets CFG, SRC, FT (the
# OUTPUT_DIR), TP and EXPECTED (EXPECTED_WEIGHTS_JSON).
stage_convert() {
  local f
  CFG=$BATS_TEST_TMPDIR/convert-$1.env
  plan_conf "$1" convert >"$CFG"
  SRC=$(conf_array "$CFG" SOURCE_DIR)
  # shellcheck disable=SC2034 # read by the .bats files
  FT=$(conf_array "$CFG" OUTPUT_DIR)
  # shellcheck disable=SC2034
  TP=$(conf_array "$CFG" TP)
  # shellcheck disable=SC2034
  EXPECTED=$(conf_array "$CFG" EXPECTED_WEIGHTS_JSON)
  mkdir -p "$SRC"
  echo '{}' >"$SRC/config.json"
  echo 'input_hash=abc' >"$SRC/.triton-ft-fetch"
  while read -r f; do
    mkdir -p "$(dirname "$f")"
    case $f in
      */config.ini) plan_value "$1" conversion.phases.configIni.content >"$f" ;;
      *.any-type.json)
        plan_value "$1" expectedWeights | node -e '
          const w = JSON.parse(require("fs").readFileSync(0, "utf8"));
          delete w.config.weight_data_type;
          process.stdout.write(JSON.stringify(w, null, 2) + "\n");
        ' >"$f"
        ;;
      *) plan_value "$1" expectedWeights >"$f" ;;
    esac
  done < <(plan_value "$1" buildSteps | node -e '
    const steps = JSON.parse(require("fs").readFileSync(0, "utf8"));
    for (const f of steps.find((s) => s.id === "convert").files) console.log(f);
  ')
}

# refute <cmd...> : fails when cmd succeeds. (A bare `! cmd` does not fail a
# bats test unless it is the last line.)
refute() {
  if "$@"; then
    echo "unexpectedly succeeded: $*" >&2
    return 1
  fi
}
