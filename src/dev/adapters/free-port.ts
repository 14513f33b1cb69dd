import { createServer } from "node:net";

/**
 * freePort asks the kernel for a free loopback port (bind :0, read it, close). etcd cannot
 * report a port it chose itself, so its two ports are picked this way just before it starts.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
