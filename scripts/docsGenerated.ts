/**
 * The generated blocks of the documentation pages: which page holds which block, and the page text with
 * every block rendered from the code. `npm run docs:config` writes them (scripts/config-reference.ts);
 * test/unit/config.test.ts fails when a page drifts from the code.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { OUTPUTS_END, OUTPUTS_START, REFERENCE_END, REFERENCE_START, configReference } from "../infra/config/reference";
import { outputsMarkdownTable } from "../infra/outputs";

export const ROOT = join(__dirname, "..");

interface Block {
  start: string;
  end: string;
  render: () => string;
}

/** Page (relative to the repository root) -> the generated blocks it holds. */
export const GENERATED_PAGES: Record<string, Block[]> = {
  "docs/config-reference.md": [{ start: REFERENCE_START, end: REFERENCE_END, render: configReference }],
  "docs/outputs.md": [{ start: OUTPUTS_START, end: OUTPUTS_END, render: outputsMarkdownTable }],
};

function replaceBlock(page: string, text: string, block: Block): string {
  const start = text.indexOf(block.start);
  const end = text.indexOf(block.end);
  if (start < 0 || end < start) throw new Error(`${page} lacks the markers ${block.start} ... ${block.end}`);
  return text.slice(0, start + block.start.length) + "\n" + block.render() + "\n" + text.slice(end);
}

/** The page's text with every generated block replaced by what the code renders today. */
export function withGenerated(page: string, text: string): string {
  const blocks = GENERATED_PAGES[page];
  if (!blocks) throw new Error(`${page} holds no generated block`);
  return blocks.reduce((t, b) => replaceBlock(page, t, b), text);
}

/** Each page with generated blocks: its current text and the text it should have. */
export function generatedPages(): { page: string; path: string; current: string; next: string }[] {
  return Object.keys(GENERATED_PAGES).map((page) => {
    const path = join(ROOT, page);
    const current = readFileSync(path, "utf8");
    return { page, path, current, next: withGenerated(page, current) };
  });
}
