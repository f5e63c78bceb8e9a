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
  export PATH="$T/bin:$PATH"
  unset HF_TOKEN STUB_FAIL_ONCE STUB_FAIL_ALWAYS STUB_GPUS STUB_DF_AVAIL_KIB STUB_GIT_LFS
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

# plan_conf <stack> <step> : the step config `npm run synth` renders for a
# committed stack (Pulumi.<stack>.yaml), moved under this test's work root:
# the builder's /opt/triton-ft (work/, plan/, images/, scripts/, steps/)
# becomes $WORK, and the deploy-time values
# (`@{name}`) get the test's region, registry and base image. Rendered once
# per bats run into $BATS_RUN_TMPDIR (or taken from $SYNTH_DIR).
plan_conf() {
  local dir=${SYNTH_DIR:-$BATS_RUN_TMPDIR/synth}
  if [[ ! -f $dir/$1/steps/$2.conf ]]; then
    (cd "$REPO_ROOT" && npx --no-install tsx scripts/synth.ts --stack "$1" --out "$dir/$1" >/dev/null) \
      || { echo "synth --stack $1 failed" >&2; return 1; }
  fi
  # Builder-side paths only: /opt/triton-ft/{weights,model-repository,tokenizer} are server-image paths.
  sed -e "s#'/opt/triton-ft'#'$WORK'#g" \
    -e "s#/opt/triton-ft/\(work\|plan\|images\|scripts\|steps\)\([/']\)#$WORK/\1\2#g" \
    -e "s#@{awsRegion}#us-east-1#g" \
    -e "s#@{ecrRegistry}#$TEST_REGISTRY#g" \
    -e "s#@{tritonWithFtImage}#$BASE_REF#g" \
    -e "s#@{tritonWithFtRepositoryUrl}#$TEST_REGISTRY/triton-ft-test/triton_with_ft#g" \
    -e "s#@{serverRepositoryUrl}#$TEST_REGISTRY/triton-ft-test/server#g" \
    "$dir/$1/steps/$2.conf"
}

# refute <cmd...> : fails when cmd succeeds. (A bare `! cmd` does not fail a
# bats test unless it is the last line.)
refute() {
  if "$@"; then
    echo "unexpectedly succeeded: $*" >&2
    return 1
  fi
}
