/**
 * The build steps exactly as the program registers them under Pulumi's mock
 * runtime: every remote.CopyToRemote (its source and remotePath) and every
 * remote.Command (its command string, environment and stdin), in registration
 * order, which respects every dependency (a resource registers only after the
 * resources it depends on). Replayed over a real SSH connection by the tests.
 */
import * as path from "node:path";
import type { Client } from "ssh2";
import type { ProgramRun } from "../lib/pulumi";
import { ROOT } from "../k8s/stacks";
import { copyToRemote, exec, type ExecResult } from "./client";

export type Op =
  | { kind: "copy"; name: string; remotePath: string; source: { path: string } | { text: string } }
  | { kind: "exec"; name: string; command: string; environment?: Record<string, string>; stdin?: string };

export interface ProgramConnection {
  host: string;
  port?: number;
  user: string;
  privateKey: string;
  hostKey?: string;
}

export interface Extracted {
  ops: Op[];
  connection: ProgramConnection;
  userData: string;
}

async function resolveSource(source: unknown, name: string): Promise<{ path: string } | { text: string }> {
  const s = source as { __pulumiArchive?: boolean; __pulumiAsset?: boolean; path?: unknown; text?: unknown };
  if (s.path !== undefined) {
    const p = await Promise.resolve(s.path);
    if (typeof p === "string") return { path: path.resolve(ROOT, p) };
  }
  if (s.text !== undefined) {
    const t = await Promise.resolve(s.text);
    if (typeof t === "string") return { text: t };
  }
  throw new Error(`${name}: unsupported CopyToRemote source ${JSON.stringify(source)}`);
}

export async function extractPipeline(run: ProgramRun): Promise<Extracted> {
  const ops: Op[] = [];
  let connection: ProgramConnection | undefined;
  for (const r of run.resources) {
    if (r.type === "command:remote:CopyToRemote" || r.type === "command:remote:Command") {
      connection ??= r.inputs.connection as ProgramConnection;
    }
    if (r.type === "command:remote:CopyToRemote") {
      ops.push({
        kind: "copy",
        name: r.name,
        remotePath: String(r.inputs.remotePath),
        source: await resolveSource(r.inputs.source, r.name),
      });
    } else if (r.type === "command:remote:Command") {
      if (typeof r.inputs.create !== "string") throw new Error(`${r.name}: no create command`);
      ops.push({
        kind: "exec",
        name: r.name,
        command: r.inputs.create,
        environment: r.inputs.environment as Record<string, string> | undefined,
        stdin: typeof r.inputs.stdin === "string" ? r.inputs.stdin : undefined,
      });
    }
  }
  const instances = run.resources.filter((r) => r.type === "aws:ec2/instance:Instance");
  const withUserData = instances.find((r) => typeof r.inputs.userData === "string" || r.inputs.userDataBase64);
  const userData =
    typeof withUserData?.inputs.userData === "string"
      ? withUserData.inputs.userData
      : Buffer.from(String(withUserData?.inputs.userDataBase64 ?? ""), "base64").toString();
  if (!connection) throw new Error("the program registers no remote command");
  if (!userData) throw new Error("the builder instance has no user data");
  return { ops, connection, userData };
}

export interface OpResult {
  op: Op;
  result?: ExecResult;
}

/** Replays the ops in order; stops at the first command that fails, as Pulumi does for its dependents. */
export async function replay(client: Client, ops: Op[]): Promise<{ results: OpResult[]; failed?: OpResult }> {
  const results: OpResult[] = [];
  for (const op of ops) {
    if (op.kind === "copy") {
      await copyToRemote(client, op.source, op.remotePath);
      results.push({ op });
      continue;
    }
    const result = await exec(client, op.command, { environment: op.environment, stdin: op.stdin });
    const r = { op, result };
    results.push(r);
    if (result.code !== 0) return { results, failed: r };
  }
  return { results };
}
