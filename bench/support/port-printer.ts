import { join } from "node:path";

/** spawnPortPrinter starts a bench helper script (path relative to bench/) and reads the port it prints. */
export async function spawnPortPrinter(script: string, ...args: string[]) {
  const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", process.execPath, join(import.meta.dir, "..", script), ...args], {
    stdout: "pipe",
  });
  const port = Number(new TextDecoder().decode((await proc.stdout.getReader().read()).value).trim());
  return { proc, addr: `127.0.0.1:${port}` };
}
