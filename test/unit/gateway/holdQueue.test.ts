/**
 * The hold queue of a model that may sleep (admission/holdQueue.ts) and the
 * readiness watch that releases it (models/readinessWatch.ts), on fake
 * timers: bounded places, first in first out, the timeout, a client leaving,
 * the Retry-After of a full queue, the gauge's value after every change, and
 * the status /v1/models shows. The HTTP side runs in routes.test.ts and
 * against a real tritonserver in test/gateway/wake.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type HoldEnd, HoldQueue } from "../../../images/gateway/src/admission/holdQueue";
import { ReadinessWatch, statusOf } from "../../../images/gateway/src/models/readinessWatch";
import { FakeTriton } from "./fakeTriton";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function queue(depth: number, timeoutMs = 60_000): { q: HoldQueue; sizes: number[] } {
  const sizes: number[] = [];
  const q = new HoldQueue({ depth, timeoutMs, onSize: (n) => sizes.push(n), now: () => Date.now() });
  return { q, sizes };
}

describe("HoldQueue", () => {
  it("holds up to its depth and refuses the next one", () => {
    const { q, sizes } = queue(2);
    expect(q.enter()).toBeDefined();
    expect(q.enter()).toBeDefined();
    expect(q.enter()).toBeUndefined();
    expect(q.size).toBe(2);
    expect(sizes).toEqual([1, 2]);
  });

  it("releases every held request first in first out, and is empty after", async () => {
    const { q, sizes } = queue(5);
    const order: number[] = [];
    const holds = [0, 1, 2, 3, 4].map((i) => {
      const hold = q.enter();
      if (!hold) throw new Error("refused");
      void hold.end.then((end) => order.push(end === "released" ? i : -1));
      return hold;
    });
    q.releaseAll();
    await Promise.all(holds.map((h) => h.end));
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(q.size).toBe(0);
    expect(sizes.at(-1)).toBe(0);
  });

  it("ends a request with timeout after timeoutMs, not before", async () => {
    const { q } = queue(2, 10_000);
    const hold = q.enter();
    if (!hold) throw new Error("refused");
    let end: HoldEnd | undefined;
    void hold.end.then((e) => (end = e));
    await vi.advanceTimersByTimeAsync(9_999);
    expect(end).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(end).toBe("timeout");
    expect(q.size).toBe(0);
  });

  it("frees a leaving request's place at once, keeping the others' order", async () => {
    const { q, sizes } = queue(2);
    const first = q.enter();
    const second = q.enter();
    if (!first || !second) throw new Error("refused");
    first.leave();
    expect(await first.end).toBe("gone");
    expect(q.size).toBe(1);
    // Its place is free: a third request is held.
    expect(q.enter()).toBeDefined();
    expect(sizes).toEqual([1, 2, 1, 2]);
    q.releaseAll();
    expect(await second.end).toBe("released");
  });

  it("settles each request once: leaving after the release or the timeout changes nothing", async () => {
    const { q } = queue(2, 1_000);
    const released = q.enter();
    if (!released) throw new Error("refused");
    q.releaseAll();
    released.leave();
    expect(await released.end).toBe("released");
    const timedOut = q.enter();
    if (!timedOut) throw new Error("refused");
    await vi.advanceTimersByTimeAsync(1_000);
    timedOut.leave();
    q.releaseAll();
    expect(await timedOut.end).toBe("timeout");
    expect(q.size).toBe(0);
  });

  it("asks a refused client to retry when the oldest held request times out", async () => {
    const { q } = queue(2, 30_000);
    expect(q.retryAfterSeconds()).toBe(1);
    q.enter();
    expect(q.retryAfterSeconds()).toBe(30);
    await vi.advanceTimersByTimeAsync(12_500);
    q.enter();
    // The oldest's timeout, not the newest's.
    expect(q.retryAfterSeconds()).toBe(18);
  });

  it("ends every held request with closing when the pod shuts down", async () => {
    const { q, sizes } = queue(3);
    const holds = [q.enter(), q.enter()];
    q.closeAll();
    expect(await Promise.all(holds.map((h) => h?.end))).toEqual(["closing", "closing"]);
    expect(sizes.at(-1)).toBe(0);
  });
});

describe("ReadinessWatch", () => {
  it("sees the model down, loading, then ready, and tells its listeners each change", async () => {
    const triton = new FakeTriton();
    triton.isLive = false;
    const failing = vi.spyOn(triton, "ready").mockRejectedValue(new Error("connect ECONNREFUSED"));
    const watch = new ReadinessWatch(triton, 100, 1000);
    const changes: string[] = [];
    watch.onChange((seen, before) => changes.push(`${before}->${seen}`));
    watch.start();
    await vi.advanceTimersByTimeAsync(0);
    expect([watch.seen, watch.ready]).toEqual(["down", false]);
    failing.mockResolvedValue(false);
    await vi.advanceTimersByTimeAsync(100);
    expect(watch.seen).toBe("loading");
    failing.mockResolvedValue(true);
    await vi.advanceTimersByTimeAsync(100);
    expect([watch.seen, watch.ready]).toEqual(["ready", true]);
    // Ready: polled every readyPollMs (1000 here) only.
    const polls = failing.mock.calls.length;
    await vi.advanceTimersByTimeAsync(500);
    expect(failing.mock.calls.length).toBe(polls);
    // A request found it gone: down at once, and polled again after pollMs, not readyPollMs.
    failing.mockRejectedValue(new Error("connect ECONNREFUSED"));
    watch.markDown();
    expect(watch.ready).toBe(false);
    failing.mockResolvedValue(true);
    await vi.advanceTimersByTimeAsync(100);
    expect(watch.ready).toBe(true);
    watch.stop();
    expect(changes).toEqual(["down->loading", "loading->ready", "ready->down", "down->ready"]);
  });

  it("status: ready, waking while loading or holding, sleeping otherwise", () => {
    expect(statusOf("ready", 3)).toBe("ready");
    expect(statusOf("loading", 0)).toBe("waking");
    expect(statusOf("down", 1)).toBe("waking");
    expect(statusOf("down", 0)).toBe("sleeping");
  });
});
