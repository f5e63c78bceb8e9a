/** Small helpers the process-level suites (ssh, k8s, gateway) share: a free local port, a pause. */
import * as net from "node:net";

/** A port nothing listens on right now: the kernel picks it, the probe server gives it back. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
