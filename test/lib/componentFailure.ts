/**
 * Runs one component under the mock runtime in its own process and prints, as
 * JSON, the errors its outputs failed with: whether each is a
 * pulumi.ResourceError, the URN it names and its message. In a real
 * `pulumi up` the runtime reports such an error against that resource; under
 * vitest a ResourceError surfacing as an unhandled rejection would be
 * serialized together with the whole resource graph, so component tests ask
 * this child instead.
 *
 * usage: tsx test/lib/componentFailure.ts network-existing '<NetworkArgs["network"] JSON>'
 */
import * as pulumi from "@pulumi/pulumi";
import { CALL_RESULTS } from "./mocks";

interface Seen {
  resourceError: boolean;
  urn?: string;
  message: string;
}

async function main(): Promise<void> {
  const [kind, json] = process.argv.slice(2);
  if (kind !== "network-existing" || !json) throw new Error("usage: componentFailure.ts network-existing '<json>'");
  const seen: Seen[] = [];
  const record = async (e: unknown) => {
    const err = e instanceof Error ? e : new Error(String(e));
    const resource = err instanceof pulumi.ResourceError ? err.resource : undefined;
    seen.push({
      resourceError: err instanceof pulumi.ResourceError,
      urn: resource ? await new Promise<string>((r) => resource.urn.apply((u) => r(u))) : undefined,
      message: err.message,
    });
  };
  process.on("unhandledRejection", (e) => void record(e));
  process.on("exit", () => console.log(JSON.stringify(seen)));
  pulumi.runtime.setMocks(
    {
      newResource: (a) => ({ id: `${a.name}-id`, state: a.inputs }),
      call: (a) => CALL_RESULTS[a.token]?.(a.inputs) ?? {},
    },
    "triton-ft",
    "test",
    false,
  );
  const { Network } = await import("../../infra/components/network");
  const n = new Network("net", { network: JSON.parse(json), tags: {} });
  n.vpcId.apply((id) => console.error(`vpcId resolved: ${id}`));
}

void main();
