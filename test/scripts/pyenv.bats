#!/usr/bin/env bats
# test/lib/pyenv.sh's lock: .ci/run builds the venvs in the background
# (test/lib/prebuild-venvs.sh) while the suites call pyenv.sh for the same
# locks, so a second caller must wait for the build under way, not delete and
# rebuild it, and must build it itself when the build it waited for failed.
# The interpreter is a stand-in (FAKE_PIP_SECONDS long, one line per build in
# $T/builds); the cache is this test's own folder (TRITON_FT_CACHE).

load helpers
bats_require_minimum_version 1.5.0

setup() {
  T=$BATS_TEST_TMPDIR
  export TRITON_FT_CACHE=$T/cache PYENV_BUILDS=$T/builds FAKE_PIP_SECONDS=3 FAKE_PIP_FAIL=$T/fail-once
  mkdir -p "$T/bin"
  # `python -c ...` prints a version; `python -m venv DIR` makes DIR/bin/python,
  # this same script, whose `-m pip install` logs one build, takes
  # FAKE_PIP_SECONDS, and fails once if $FAKE_PIP_FAIL exists.
  cat >"$T/bin/python" <<'STUB'
#!/usr/bin/env bash
case "$1 $2" in
  "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
  "-m pip")
    echo "build $$" >>"$PYENV_BUILDS"
    sleep "$FAKE_PIP_SECONDS"
    if [[ -f $FAKE_PIP_FAIL ]]; then rm -f "$FAKE_PIP_FAIL"; echo "ERROR: no such wheel"; exit 1; fi
    echo "Successfully installed fake-1.0" ;;
  *) echo "3.0.0 (fake)" ;;
esac
STUB
  chmod +x "$T/bin/python"
  export PYTHON=$T/bin/python
  printf 'fake==1.0\n' >"$T/requirements.lock"
}

@test "pyenv: a second caller waits for the build under way and gets the same venv, built once" {
  bash "$REPO_ROOT/test/lib/pyenv.sh" "$T/requirements.lock" >"$T/first.out" 2>"$T/first.err" &
  first=$!
  sleep 1
  run --separate-stderr bash "$REPO_ROOT/test/lib/pyenv.sh" "$T/requirements.lock"
  wait "$first"
  [ "$status" -eq 0 ]
  [ "$output" = "$(cat "$T/first.out")" ]
  [ -f "$output/.complete" ]
  [ "$(wc -l <"$PYENV_BUILDS")" -eq 1 ]
  [[ $stderr == *"waiting for $output: another process builds it (pid $first, progress in $T/first.err)"* ]]
  [[ $stderr == *"ready (built by the other process"* ]]
}

@test "pyenv: after the build it waited for failed, the caller builds the venv itself" {
  touch "$FAKE_PIP_FAIL"
  run bash -c "bash '$REPO_ROOT/test/lib/pyenv.sh' '$T/requirements.lock' 2>'$T/first.err' & sleep 1
    bash '$REPO_ROOT/test/lib/pyenv.sh' '$T/requirements.lock'; rc=\$?; wait \$!; echo \"first \$?\"; exit \$rc"
  [ "$status" -eq 0 ]
  [[ $output == *"the other build of "*" did not complete; building it here"* ]]
  [[ $output == *"first 1"* ]]
  grep -q "pip install from .* failed" "$T/first.err"
  [ "$(wc -l <"$PYENV_BUILDS")" -eq 2 ]
  venv=$(bash "$REPO_ROOT/test/lib/pyenv.sh" "$T/requirements.lock" 2>/dev/null)
  [ -f "$venv/.complete" ]
}

@test "pyenv: a complete venv is returned at once, without a build or the lock" {
  FAKE_PIP_SECONDS=0 bash "$REPO_ROOT/test/lib/pyenv.sh" "$T/requirements.lock" >/dev/null 2>&1
  venv=$(bash "$REPO_ROOT/test/lib/pyenv.sh" "$T/requirements.lock" 2>/dev/null)
  exec {held}>"$venv.lock"
  flock "$held"
  run timeout 5 bash "$REPO_ROOT/test/lib/pyenv.sh" "$T/requirements.lock"
  exec {held}>&-
  [ "$status" -eq 0 ]
  [ "$output" = "$venv" ]
  [ "$(wc -l <"$PYENV_BUILDS")" -eq 1 ]
}
