# shellcheck shell=bash
# The interpreter of test/python's venvs, shared by test/python/run.sh and
# test/lib/prebuild-venvs.sh (a venv's key holds the interpreter's version, so
# building it ahead of the suite helps only with the suite's own interpreter).
# Sourced, not run.
#
# The converters run on the triton_with_ft image's Python, 3.10 (NGC tritonserver
# 23.05), so the venvs are built from a 3.10 where one is at hand (PATH, or
# pyenv's versions, which pyenv's shims hide unless selected). Without one,
# python3: the locks carry every file's hash of each version, so they install on
# a newer CPython too, and the image's pins all publish wheels for it.
# PYTHON, when set, wins (the callers check it before calling this).

# find_python310: prints a Python 3.10 interpreter's path, or fails when there is none.
find_python310() {
  local c
  for c in python3.10 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10.*/bin/python3.10; do
    if "$c" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 10))' >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}
