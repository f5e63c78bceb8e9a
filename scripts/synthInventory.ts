/**
 * synth's inventory side: `writeInventory` runs the program offline and writes
 * `<out>/resources.json` + `<out>/resources.txt`; `diffCommand` implements
 * `npm run synth -- --diff <old-out> <new-out>`.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { createHash } from "node:crypto";
import { PROJECT, SECRET_KEYS } from "../infra/config";
import {
  INVENTORY_FILE,
  INVENTORY_SUMMARY_FILE,
  UNKNOWN_MARK,
  inventoryJson,
  inventorySummary,
  parseInventory,
  type Inventory,
} from "../infra/synth/inventory";
import { diffInventories, formatDiff } from "../infra/synth/inventoryDiff";
import { buildInventory, engineConfig } from "../infra/mock/inventory";
import type { MockCloud, PulumiSdk } from "../infra/mock/runtime";
import { CALL_RESULTS, resourceState } from "../test/lib/mocks";
import type { CostReport } from "../infra/cost";
import { diffLines, diffMarkdown } from "../infra/cost/format";
import { COST_FILE, parseCostReport } from "../infra/synth/costArtifacts";

export interface LoadedProgram {
  pulumi: PulumiSdk;
  program: () => unknown;
}

/** The real program with the SDK it imports (one run per process: the SDK's state is global). */
export async function loadProgram(): Promise<LoadedProgram> {
  const pulumi = await import("@pulumi/pulumi");
  const { program } = await import("../infra/program");
  return { pulumi, program };
}

/**
 * What the program sees for a `secure:` value synth cannot decrypt: something it
 * can parse, naming nothing real. Only the kubeconfig is parsed (for the cluster
 * name, which then shows as [unknown]); every other secret is an opaque string.
 * Each carries a hash of the ciphertext, so setting the secret anew (a new
 * ciphertext in the stack file) changes the fingerprints of what it flows
 * into: the inventory diff shows the change, as `pulumi preview` would.
 */
export function secretStandIn(key: string, ciphertext = ""): string {
  const hash = createHash("sha256").update(ciphertext).digest("hex").slice(0, 12);
  if (key === `${PROJECT}:kubeconfig`)
    return [
      `# synth's stand-in for a secure value (ciphertext sha256 ${hash})`,
      "apiVersion: v1",
      "kind: Config",
      "current-context: offline",
      `clusters: [{name: offline, cluster: {server: "https://offline.invalid"}}]`,
      `contexts: [{name: offline, context: {cluster: "${UNKNOWN_MARK}", user: offline}}]`,
      "users: [{name: offline, user: {}}]",
      "",
    ].join("\n");
  return `synth stand-in for a secure value (ciphertext sha256 ${hash})`;
}

/**
 * The reference run's cloud (infra/mock/inventory.ts): the unit tests' mock
 * cloud, whose ids, ARNs and endpoints are stand-ins derived from the
 * resource names, the same on every run.
 */
const REFERENCE_CLOUD: MockCloud = {
  newResource({ type, name, inputs, id }) {
    const r = resourceState(type, name, inputs);
    return { id: id || r.id, state: r.state };
  },
  call({ token, inputs }) {
    const fn = CALL_RESULTS[token];
    return fn ? fn(inputs) : inputs;
  },
};

export interface InventoryArgs {
  stackName: string;
  stackFileText: string;
  outDir: string;
  repoRoot: string;
  load?: () => Promise<LoadedProgram>;
}

/** Writes resources.json and resources.txt into outDir; returns one summary line for synth's stdout. */
export async function writeInventory(args: InventoryArgs): Promise<string> {
  const { pulumi, program } = await (args.load ?? loadProgram)();
  const secretKeys = Object.keys(SECRET_KEYS).map((k) => `${PROJECT}:${k}`);
  const inventory = await buildInventory({
    pulumi,
    program,
    project: PROJECT,
    stack: args.stackName,
    ...engineConfig(args.stackFileText, secretKeys, secretStandIn),
    repoRoot: args.repoRoot,
    // The unit tests' mock cloud knows the result shape of every data source the program calls.
    invokeShapes: CALL_RESULTS,
    reference: REFERENCE_CLOUD,
  });
  fs.mkdirSync(args.outDir, { recursive: true });
  fs.writeFileSync(path.join(args.outDir, INVENTORY_FILE), inventoryJson(inventory));
  const summary = inventorySummary(inventory);
  fs.writeFileSync(path.join(args.outDir, INVENTORY_SUMMARY_FILE), summary.join("\n") + "\n");
  return `inventory: ${summary[0]} -> ${INVENTORY_FILE}, ${INVENTORY_SUMMARY_FILE}`;
}

export interface DiffIo {
  cwd: string;
  stdout(line: string): void;
  stderr(line: string): void;
}

/**
 * Inventories under a path, by stack: a resources.json file, a synth output
 * folder holding one, or a folder of synth output folders (out/ with dev/, prod/).
 */
export function findInventories(target: string): Map<string, Inventory> {
  const found = new Map<string, Inventory>();
  const add = (file: string) => {
    const inv = parseInventory(fs.readFileSync(file, "utf8"), file);
    if (found.has(inv.stack)) throw new Error(`${target}: two inventories for stack ${inv.stack}`);
    found.set(inv.stack, inv);
  };
  if (!fs.existsSync(target)) throw new Error(`${target} does not exist`);
  if (fs.statSync(target).isFile()) {
    add(target);
  } else if (fs.existsSync(path.join(target, INVENTORY_FILE))) {
    add(path.join(target, INVENTORY_FILE));
  } else {
    for (const entry of fs.readdirSync(target, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const file = path.join(target, entry.name, INVENTORY_FILE);
      if (entry.isDirectory() && fs.existsSync(file)) add(file);
    }
  }
  return found;
}

/** The cost.json beside each inventory found under a path (a synth output folder, or a folder of them), by stack. */
export function findCostReports(target: string): Map<string, CostReport> {
  const found = new Map<string, CostReport>();
  const add = (file: string) => {
    if (!fs.existsSync(file)) return;
    const r = parseCostReport(fs.readFileSync(file, "utf8"), file);
    found.set(r.stack, r);
  };
  if (!fs.existsSync(target)) return found;
  if (fs.statSync(target).isFile()) add(path.join(path.dirname(target), COST_FILE));
  else if (fs.existsSync(path.join(target, COST_FILE))) add(path.join(target, COST_FILE));
  else
    for (const entry of fs.readdirSync(target, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1)))
      if (entry.isDirectory()) add(path.join(target, entry.name, COST_FILE));
  return found;
}

export interface DiffOptions {
  /** Also write the cost change as a markdown section (the pull-request comment's) to this file. */
  costMarkdown?: string;
}

/** Prints the change list of every stack found on either side. Returns the exit code (0, or 2 on bad input). */
export function diffCommand(oldTarget: string, newTarget: string, io: DiffIo, options: DiffOptions = {}): number {
  let before: Map<string, Inventory>;
  let after: Map<string, Inventory>;
  try {
    before = findInventories(path.resolve(io.cwd, oldTarget));
    after = findInventories(path.resolve(io.cwd, newTarget));
  } catch (err) {
    io.stderr(`${PROJECT}: --diff: ${(err as Error).message}`);
    return 2;
  }
  for (const [target, side] of [
    [oldTarget, before],
    [newTarget, after],
  ] as const)
    if (!side.size)
      io.stderr(
        `${PROJECT}: --diff: no ${INVENTORY_FILE} under ${target}; every stack counts as only on the other side`,
      );
  const stacks = [...new Set([...before.keys(), ...after.keys()])].sort();
  if (!stacks.length) {
    io.stderr(`${PROJECT}: --diff: no inventories on either side (run \`npm run synth -- --stack <name>\` first)`);
    return 2;
  }
  // The cost and time estimate (cost.json beside each inventory): its change heads each stack's list.
  let costsBefore: Map<string, CostReport>;
  let costsAfter: Map<string, CostReport>;
  try {
    costsBefore = findCostReports(path.resolve(io.cwd, oldTarget));
    costsAfter = findCostReports(path.resolve(io.cwd, newTarget));
  } catch (err) {
    io.stderr(`${PROJECT}: --diff: ${(err as Error).message}`);
    return 2;
  }
  const costLines = (stack: string) => diffLines(costsBefore.get(stack), costsAfter.get(stack));
  if (options.costMarkdown) {
    const sections = stacks
      .filter((s) => costsBefore.has(s) || costsAfter.has(s))
      .map((s) => diffMarkdown(s, costsBefore.get(s), costsAfter.get(s)));
    fs.writeFileSync(path.resolve(io.cwd, options.costMarkdown), sections.join("\n\n") + "\n");
  }
  let first = true;
  for (const stack of stacks) {
    if (!first) io.stdout("");
    first = false;
    const a = before.get(stack);
    const b = after.get(stack);
    if (!a || !b) {
      // A new (or deleted) stack: every resource, without their fields.
      const inv = (a ?? b) as Inventory;
      const empty: Inventory = { ...inv, resources: [], outputs: {} };
      io.stdout(`stack ${stack}: only in ${a ? oldTarget : newTarget}`);
      for (const line of costLines(stack)) io.stdout(line);
      const diff = a ? diffInventories(inv, empty) : diffInventories(empty, inv);
      for (const line of formatDiff(diff, { maxAddedFields: 0 }).filter(
        (l) => !l.startsWith("    ") && !l.startsWith("~ stack outputs"),
      ))
        io.stdout(line);
      continue;
    }
    const [header, ...rest] = formatDiff(diffInventories(a, b));
    io.stdout(header ?? `stack ${stack}`);
    for (const line of costLines(stack)) io.stdout(line);
    for (const line of rest) io.stdout(line);
  }
  return 0;
}
