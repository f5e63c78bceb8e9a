/** The program for synth's CLI in tests (scripts/synth.ts `cli`), loaded anew for every run. */
import { vi } from "vitest";
import type { LoadedProgram } from "../../scripts/synthInventory";

/** A fresh SDK and program for every run: the mock runtime's state is process-global. */
export async function freshProgram(): Promise<LoadedProgram> {
  vi.resetModules();
  const pulumi = await import("@pulumi/pulumi");
  const { program } = await import("../../infra/program");
  return { pulumi, program };
}
