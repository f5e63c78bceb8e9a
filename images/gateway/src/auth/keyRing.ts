/**
 * API keys: `Authorization: Bearer <key>`. The gateway holds only SHA-256
 * hashes (keys are 256-bit random strings, so a fast hash is enough; there is
 * nothing to brute-force). The presented key's hash is compared with every
 * stored hash in constant time, without stopping at a match, so the time taken
 * reveals neither which key matched nor how much of a hash did.
 */
import { createHash, hash, timingSafeEqual } from "node:crypto";
import type { Consumer, KeysFile } from "../config";

export function sha256Hex(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

interface Entry {
  hash: Buffer;
  consumer: Consumer;
}

export class KeyRing {
  private entries: Entry[] = [];
  private shares = 0;

  constructor(keys: KeysFile) {
    this.replace(keys);
  }

  /** Swap in a re-read keys file (the Secret changed: a key was added or removed). */
  replace(keys: KeysFile): void {
    this.entries = keys.consumers.flatMap((consumer) =>
      consumer.keySha256.map((hex) => ({ hash: Buffer.from(hex, "hex"), consumer })),
    );
    this.shares = keys.consumers.reduce((sum, c) => sum + (c.share ?? 1), 0);
  }

  /** The sum of every team's share weight (default 1 each): the in-flight cap is divided by it. */
  get totalShare(): number {
    return this.shares;
  }

  get size(): number {
    return this.entries.length;
  }

  /** The consumer whose key this Authorization header carries, or undefined. */
  authenticate(header: string | undefined): Consumer | undefined {
    const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header ?? "");
    if (!match) return undefined;
    // One-shot hash: no Hash object per request (this runs on every request's path).
    const presented = hash("sha256", match[1], "buffer");
    let found: Consumer | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(presented, entry.hash) && found === undefined) found = entry.consumer;
    }
    return found;
  }
}
