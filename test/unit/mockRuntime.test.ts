/**
 * The mock runtime core (infra/mock/runtime.ts) records resource options as
 * the engine receives them: the registration request's own fields.
 */
import { describe, expect, it, vi } from "vitest";
import { runUnderMocks } from "../../infra/mock/runtime";
import { urnToTypeName } from "../../infra/mock/options";

async function run(rootStack: boolean) {
  vi.resetModules();
  const pulumi = await import("@pulumi/pulumi");
  const random = await import("@pulumi/random");
  return runUnderMocks({
    pulumi,
    project: "p",
    stack: "s",
    config: {},
    preview: false,
    rootStack,
    cloud: { newResource: ({ inputs }) => ({ state: inputs }), call: ({ inputs }) => inputs },
    program: () => {
      const group = new pulumi.ComponentResource("test:index:Group", "group");
      const first = new random.RandomString("first", { length: 8 }, { parent: group });
      new random.RandomString(
        "second",
        { length: 8 },
        {
          dependsOn: [group],
          customTimeouts: { create: "45m", delete: "5m" },
          replaceOnChanges: ["length"],
          deleteBeforeReplace: true,
          ignoreChanges: ["special"],
          aliases: [{ name: "older" }, "urn:pulumi:s::p::random:index/randomString:RandomString::oldest"],
          protect: true,
        },
      );
      return { first: first.result };
    },
  });
}

describe("mock runtime: resource options", () => {
  for (const rootStack of [false, true]) {
    it(`every option the engine receives is recorded (${rootStack ? "inside" : "without"} a root stack)`, async () => {
      const { registrations } = await run(rootStack);
      const second = registrations.find((r) => r.name === "second");
      expect(second?.options).toEqual({
        customTimeouts: { create: "45m", delete: "5m" },
        // dependsOn a component: the engine gets the resources under it.
        dependsOn: ["random:index/randomString:RandomString::first"],
        replaceOnChanges: ["length"],
        deleteBeforeReplace: true,
        ignoreChanges: ["special"],
        // Under a root stack the SDK fills in the alias's parent.
        aliases: [
          expect.objectContaining({ name: "older" }),
          { urn: "urn:pulumi:s::p::random:index/randomString:RandomString::oldest" },
        ],
        protect: true,
      });
      // Options not given read as unset, not as false.
      expect(registrations.find((r) => r.name === "first")?.options).toEqual({
        customTimeouts: undefined,
        dependsOn: [],
        replaceOnChanges: [],
        deleteBeforeReplace: undefined,
        ignoreChanges: [],
        aliases: [],
        protect: undefined,
      });
    });
  }

  it("URNs read as <type>::<name>, parent types dropped", () => {
    expect(urnToTypeName("urn:pulumi:s::p::pulumi:pulumi:Stack$test:index:Group$random:index/x:X::a::b")).toBe(
      "random:index/x:X::a::b",
    );
  });
});
