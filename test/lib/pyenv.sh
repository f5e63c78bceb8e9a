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
# usage: test/lib/pyenv.sh <requirements-lock-file>   -> prints the venv dir
set -euo pipefail

lock=${1:?usage: pyenv.sh <requirements-lock-file>}
[[ -f $lock ]] || { echo "pyenv: no such lock file: $lock" >&2; exit 2; }

python=${PYTHON:-python3}
cache_root=${TRITON_FT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/triton-ft}/venvs
key=$( { "$python" -c 'import sys; print(sys.version)'; cat "$lock"; } | sha256sum | cut -c1-16)
name=$(basename "$lock" .txt)
venv="$cache_root/$name-$key"

if [[ ! -f $venv/.complete ]]; then
  # A venv without the completion marker is a leftover of an interrupted
  # install: start it again from scratch rather than trust it.
  rm -rf "$venv"
  mkdir -p "$cache_root"
  echo "pyenv: creating $venv from $lock (a cold build of a torch lock downloads about 5 GB)" >&2
  "$python" -m venv "$venv"
  # Progress: pip's own lines for each package, and a heartbeat with the venv's
  # size every 30 s, since one wheel can take minutes to download.
  started=$SECONDS
  (
    while sleep 30; do
      echo "pyenv: still installing after $((SECONDS - started)) s; venv is $(du -sm "$venv" 2>/dev/null | cut -f1) MB" >&2
    done
  ) &
  heartbeat=$!
  pip_args=(--disable-pip-version-check --no-input --progress-bar off)
  if [[ $(head -n 1 "$lock") == "# pyenv: --no-deps" ]]; then pip_args+=(--no-deps); fi
  rc=0
  "$venv/bin/python" -m pip install "${pip_args[@]}" -r "$lock" 2>&1 \
    | sed -un 's/^\(Collecting\|Downloading\|Successfully installed\).*/pyenv: &/p' >&2 || rc=$?
  kill "$heartbeat" 2>/dev/null || true
  wait "$heartbeat" 2>/dev/null || true
  if ((rc != 0)); then
    echo "pyenv: pip install from $lock failed (exit $rc); the half-built venv is removed on the next run" >&2
    exit "$rc"
  fi
  echo "pyenv: $venv ready after $((SECONDS - started)) s" >&2
  touch "$venv/.complete"
fi
echo "$venv"
