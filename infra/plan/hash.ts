/** Content hashes for the build steps' input hashes. Pure: callers hand in the bytes. */
import { createHash } from "node:crypto";

export function sha256(content: string | Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}
