#!/usr/bin/env bash
# Creates (once) and prints the path of a Python virtualenv built from a
# requirements lock file. The venv lives in a cache folder keyed by the lock's
# content and the interpreter version, so CI and later sessions reuse it and a
# changed lock gets a fresh venv instead of a half-upgraded one.
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
  echo "pyenv: creating $venv from $lock" >&2
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$lock" >&2
  touch "$venv/.complete"
fi
echo "$venv"
