#!/usr/bin/env bash
# Creates (once) and prints the path of a Python virtualenv built from a
# requirements lock file. The venv lives in a cache folder keyed by the lock's
# content and the interpreter version, so CI and later sessions reuse it and a
# changed lock gets a fresh venv instead of a half-upgraded one.
#
# A lock whose first line is `# pyenv: --no-deps` is installed without pip's
# dependency resolution: the lock already lists every package, and a package's
# own pin that the lock overrides on purpose (test/vllm/lock.sh) would
# otherwise make pip refuse it. Hashes are still checked.
#
# One build per venv at a time: a caller takes the venv's lock (flock on
# <venv>.lock) before building, so a second caller (a suite while .ci/run's
# background build of the same lock is under way, test/lib/prebuild-venvs.sh)
# waits for it instead of deleting and rebuilding it, then finds it complete.
# If the build it waited for failed, the venv has no completion marker and the
# caller builds it again itself, with its own output: a failed background build
# is retried by the suite that needs the venv, and fails that suite if it fails
# again.
#
# usage: test/lib/pyenv.sh <requirements-lock-file>   -> prints the venv dir
set -euo pipefail

lock=${1:?usage: pyenv.sh <requirements-lock-file>}
[[ -f $lock ]] || { echo "pyenv: no such lock file: $lock" >&2; exit 2; }

python=${PYTHON:-python3}
cache_root=${TRITON_FT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/triton-ft}/venvs
key=$( { "$python" -c 'import sys; print(sys.version)'; cat "$lock"; } | sha256sum | cut -c1-16)
name=$(basename "$lock" .txt)
venv="$cache_root/$name-$key"

# The venv's size every 30 s, on stderr, while $1 goes on (one wheel can take minutes).
# It closes the lock's descriptor first: its `sleep`, left behind when it is killed,
# would otherwise hold the lock up to 30 s after this script has finished.
heartbeat() {
  local what=$1 started=$SECONDS
  if [[ -n ${lock_fd:-} ]]; then exec {lock_fd}>&-; fi
  while sleep 30; do
    echo "pyenv: $what after $((SECONDS - started)) s; $venv is $(du -sm "$venv" 2>/dev/null | cut -f1) MB" >&2
  done
}

if [[ ! -f $venv/.complete ]]; then
  mkdir -p "$cache_root"
  exec {lock_fd}>"$venv.lock"
  if ! flock -n "$lock_fd"; then
    # Another process builds this venv; its stderr (a log file when .ci/run
    # started it in the background) is named in the .building file it wrote.
    echo "pyenv: waiting for $venv: another process builds it ($(cat "$venv.building" 2>/dev/null || echo "no details"))" >&2
    waited=$SECONDS
    heartbeat "still waiting for the other build" &
    beat=$!
    flock "$lock_fd"
    kill "$beat" 2>/dev/null || true
    wait "$beat" 2>/dev/null || true
    if [[ -f $venv/.complete ]]; then
      echo "pyenv: $venv ready (built by the other process; waited $((SECONDS - waited)) s)" >&2
    else
      echo "pyenv: the other build of $venv did not complete; building it here" >&2
    fi
  fi
fi

if [[ ! -f $venv/.complete ]]; then
  # A venv without the completion marker is a leftover of an interrupted
  # or failed install: start it again from scratch rather than trust it.
  rm -rf "$venv"
  progress=$(readlink "/proc/$$/fd/2" 2>/dev/null || true)
  [[ $progress == /* ]] || progress="its stderr"
  echo "pid $$, progress in $progress" >"$venv.building"
  echo "pyenv: creating $venv from $lock (a cold build of a torch lock downloads about 5 GB)" >&2
  "$python" -m venv "$venv"
  # Progress: pip's own lines for each package, and a heartbeat with the venv's
  # size every 30 s, since one wheel can take minutes to download.
  started=$SECONDS
  heartbeat "still installing" &
  beat=$!
  pip_args=(--disable-pip-version-check --no-input --progress-bar off)
  if [[ $(head -n 1 "$lock") == "# pyenv: --no-deps" ]]; then pip_args+=(--no-deps); fi
  rc=0
  "$venv/bin/python" -m pip install "${pip_args[@]}" -r "$lock" 2>&1 \
    | sed -un 's/^\(Collecting\|Downloading\|Successfully installed\).*/pyenv: &/p' >&2 || rc=$?
  kill "$beat" 2>/dev/null || true
  wait "$beat" 2>/dev/null || true
  if ((rc != 0)); then
    echo "pyenv: pip install from $lock failed (exit $rc); the half-built venv is removed on the next run" >&2
    exit "$rc"
  fi
  echo "pyenv: $venv ready after $((SECONDS - started)) s" >&2
  touch "$venv/.complete"
  rm -f "$venv.building"
fi
echo "$venv"
