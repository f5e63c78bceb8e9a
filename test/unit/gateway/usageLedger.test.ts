/**
 * A pod's own usage ledger (no store) across a day's and a month's end: the
 * period names are formatted once a day, not per request, and a request
 * recorded after midnight UTC counts in the new day and month only.
 */
import { describe, expect, it } from "vitest";
import { UsageLedger } from "../../../images/gateway/src/usage/usageLedger";

describe("UsageLedger periods", () => {
  it("counts a request after midnight UTC in the new day and month, not the old ones", async () => {
    let now = new Date("2026-11-30T23:59:59.999Z");
    const ledger = new UsageLedger(undefined, () => now);
    ledger.record("team-a", "m", 5, 7);
    ledger.record("team-a", "m", 5, 7);
    let report = await ledger.report("team-a");
    expect([report.today.total.requests, report.month.total.requests]).toEqual([2, 2]);
    now = new Date("2026-12-01T00:00:00.000Z");
    ledger.record("team-a", "m", 1, 2);
    report = await ledger.report("team-a");
    expect(report.today.start).toBe("2026-12-01T00:00:00.000Z");
    expect([report.today.total.requests, report.today.total.total_tokens]).toEqual([1, 3]);
    expect([report.month.total.requests, report.month.total.total_tokens]).toEqual([1, 3]);
  });
});
