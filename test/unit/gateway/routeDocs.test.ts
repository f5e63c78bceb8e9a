/**
 * Every OpenAI-side route and probe the gateway serves is a row of the API table in
 * docs/consuming.md, the page other teams read: a route added without its row fails here
 * (docs/extending/gateway-route.md). KServe's /v2 routes are documented as one row of shapes
 * (`{id}[/versions/N]`), so they are left to the route suite.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildGateway } from "../../../images/gateway/src/app";
import { KeyRing } from "../../../images/gateway/src/auth/keyRing";
import { GatewayConfigSchema } from "../../../images/gateway/src/config";
import { GatewayMetrics } from "../../../images/gateway/src/telemetry/metrics";
import { FakeTriton, TEST_MODEL } from "./fakeTriton";

const ROOT = join(__dirname, "..", "..", "..");

/** The rows of the table under docs/consuming.md's "## API" heading. */
function apiTable(): string {
  const page = readFileSync(join(ROOT, "docs", "consuming.md"), "utf8");
  const start = page.indexOf("\n## API\n");
  const section = page.slice(start, page.indexOf("\n## ", start + 1));
  return section
    .split("\n")
    .filter((l) => l.startsWith("| `"))
    .join("\n");
}

describe("the gateway's routes in docs/consuming.md", () => {
  const config = GatewayConfigSchema.parse({ models: [TEST_MODEL] });
  const app = buildGateway({
    config,
    keys: new KeyRing({ consumers: [] }),
    tritons: new Map([[TEST_MODEL.id, new FakeTriton()]]),
    metrics: new GatewayMetrics(),
    logger: false,
  });
  const routes: string[] = [];
  // Plugins load at ready(), after this hook is in place: it sees every route they add.
  app.addHook("onRoute", (r) => {
    for (const method of [r.method].flat()) if (method !== "HEAD") routes.push(`${method} ${r.url}`);
  });
  afterAll(() => app.close());

  it("lists every /v1 route and probe as `METHOD /path` (path parameters as {id})", async () => {
    await app.ready();
    const served = routes.filter((r) => !r.includes(" /v2"));
    expect(served.length).toBeGreaterThan(5);
    const table = apiTable();
    const missing = served.filter((r) => {
      const [method, url] = r.split(" ");
      const path = (url ?? "").replace(/:\w+/g, "{id}");
      return !table.includes(`${method} ${path}`);
    });
    expect(missing).toEqual([]);
  });
});
