#!/usr/bin/env bash
# Regenerates images/gateway/package-lock.json, the lockfile the gateway image installs from
# (its build context is images/gateway alone, so it cannot use the root workspace's lockfile).
# Seeded from the root lockfile, so npm keeps every version the root workspace already
# installs and tests; test/unit/nodeEngines.test.ts fails when the two drift apart.
# Run it after any dependency change of the gateway: `npm run lock:gateway`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root/images/gateway/package.json" "$work/package.json"
node - "$root/package-lock.json" "$work/package.json" "$work/package-lock.json" <<'JS'
const fs = require("node:fs");
const [rootLock, manifest, out] = process.argv.slice(2);
const lock = JSON.parse(fs.readFileSync(rootLock, "utf8"));
const pkg = JSON.parse(fs.readFileSync(manifest, "utf8"));
const packages = {};
for (const [where, entry] of Object.entries(lock.packages)) {
  if (where === "" || entry.link || where.startsWith("images/gateway")) continue;
  packages[where] = entry;
}
packages[""] = { name: pkg.name, version: pkg.version, license: pkg.license, dependencies: pkg.dependencies,
  devDependencies: pkg.devDependencies, engines: pkg.engines };
fs.writeFileSync(out, JSON.stringify({ ...lock, name: pkg.name, version: pkg.version, packages }, null, 2));
JS
(cd "$work" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund >/dev/null)
cp "$work/package-lock.json" "$root/images/gateway/package-lock.json"
echo "images/gateway/package-lock.json: $(grep -c '"node_modules/' "$root/images/gateway/package-lock.json") packages"
