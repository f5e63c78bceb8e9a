/** `npm run docs:config` (with --write): regenerates Pulumi.yaml's project-level config block from the schema (docs/config-reference.md holds the same keys as a table). */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withProjectConfig } from "../infra/config/projectFile";

const file = join(__dirname, "..", "Pulumi.yaml");
const current = readFileSync(file, "utf8");
const next = withProjectConfig(current);
if (process.argv.includes("--write")) {
  writeFileSync(file, next);
  console.log(next === current ? "Pulumi.yaml config block is up to date" : "Pulumi.yaml config block updated");
} else if (next !== current) {
  console.error("Pulumi.yaml config block is stale: run `npm run docs:config`");
  process.exit(1);
}
