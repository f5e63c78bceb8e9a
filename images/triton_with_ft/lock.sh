#!/usr/bin/env bash
# Regenerates the Python locks from their top-level .in files:
#   images/triton_with_ft/requirements.lock   what the image installs (--require-hashes --no-deps)
#   test/python/requirements.lock             the light test venv
#   test/python/requirements-torch.lock       the torch test venv (runs the convert helpers)
# Each lock lists every transitive package with the sha256 of every file PyPI
# has for that version. The test locks are resolved with the image's lock as
# constraints, so a package both install has the image's version in both
# (test/python/test_requirement_locks.py checks it).
#
# Resolution is for the image's Python, CPython 3.10 (NGC tritonserver 23.05 is
# Ubuntu 22.04: glibc 2.35), and only sees files PyPI published before
# EXCLUDE_NEWER, so running this again gives the same locks until a .in file or
# that date changes. Move the date to take newer transitive versions.
#
# usage: images/triton_with_ft/lock.sh        (from anywhere; needs PyPI)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
EXCLUDE_NEWER=${EXCLUDE_NEWER:-2026-11-25T00:00:00Z}

# uv, pinned, in a cached venv of its own.
tools=$("$repo/test/lib/pyenv.sh" "$here/lock-tools.txt")
uv=$tools/bin/uv

compile() {
  local in=$1 out=$2 platform=$3
  shift 3
  # Paths relative to the repo root so the locks' "# via" comments name the same files on every machine.
  (cd "$repo" && "$uv" pip compile --quiet "$in" -o "$out" "$@" \
    --python-version 3.10 --python-platform "$platform" \
    --generate-hashes --exclude-newer "$EXCLUDE_NEWER" \
    --custom-compile-command "images/triton_with_ft/lock.sh")
}

# The image: Ubuntu 22.04's glibc.
compile images/triton_with_ft/requirements.in images/triton_with_ft/requirements.lock x86_64-manylinux_2_35
# The tests: any glibc Linux of the last years (the test machines are Debian);
# each lock carries the hashes of all of a version's files, so the same lock
# also installs on a newer CPython where Python 3.10 is not at hand.
for name in requirements requirements-torch; do
  compile "test/python/$name.in" "test/python/$name.lock" x86_64-manylinux_2_28 \
    --constraint images/triton_with_ft/requirements.lock
done
echo "lock.sh: wrote images/triton_with_ft/requirements.lock, test/python/requirements.lock, test/python/requirements-torch.lock" >&2
