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

# refute <cmd...> : fails when cmd succeeds. (A bare `! cmd` does not fail a
# bats test unless it is the last line.)
refute() {
  if "$@"; then
    echo "unexpectedly succeeded: $*" >&2
    return 1
  fi
}
