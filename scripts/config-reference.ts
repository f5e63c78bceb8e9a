/** `npm run docs:config`: regenerates README's configuration reference from the schema. */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withReference } from "../infra/config/reference";

const readmePath = join(__dirname, "..", "README.md");
const current = readFileSync(readmePath, "utf8");
const next = withReference(current);
if (process.argv.includes("--write")) {
  writeFileSync(readmePath, next);
  console.log(next === current ? "README.md generated blocks are up to date" : "README.md generated blocks updated");
} else if (next !== current) {
  console.error("README.md generated blocks are stale: run `npm run docs:config`");
  process.exit(1);
}
