/**
 * `npm run docs:config`: regenerates the configuration reference (docs/config-reference.md) and the
 * output contract (docs/outputs.md) from the code; without --write it only checks them.
 */
import { writeFileSync } from "node:fs";
import { generatedPages } from "./docsGenerated";

let stale = 0;
for (const { page, path, current, next } of generatedPages()) {
  if (process.argv.includes("--write")) {
    writeFileSync(path, next);
    console.log(next === current ? `${page} generated blocks are up to date` : `${page} generated blocks updated`);
  } else if (next !== current) {
    console.error(`${page} generated blocks are stale: run \`npm run docs:config\``);
    stale++;
  }
}
if (stale) process.exit(1);
