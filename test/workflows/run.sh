#!/usr/bin/env bash
# The workflows suite: actionlint (with shellcheck for every `run:` script)
# over .github/workflows, the action pinning rule, and a self-test proving
# both linters are live on a broken fixture (check.py); then the preview
# workflow's own steps run for real on a scratch repository (vitest). JUnit
# reports: $TEST_REPORT_DIR/workflows.xml and workflows-steps.xml.
#
# usage: test/workflows/run.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
report_dir=${TEST_REPORT_DIR:-$root/out/test-reports}
mkdir -p "$report_dir"

if ! command -v shellcheck >/dev/null 2>&1; then
  if ((EUID == 0)) && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >&2
  else
    echo "missing tool: shellcheck (install it, or run as root on Debian/Ubuntu)" >&2
    exit 2
  fi
fi

status=0
actionlint=$(bash "$here/install-actionlint.sh" | tail -n1)
python3 "$here/check.py" \
  --root "$root" \
  --actionlint "$actionlint" \
  --shellcheck "$(command -v shellcheck)" \
  --junit "$report_dir/workflows.xml" || status=1

(cd "$root" && npx --no-install vitest run --config test/workflows/vitest.config.mts --reporter=default \
  --reporter=junit --outputFile.junit="$report_dir/workflows-steps.xml") || status=1
exit $status
