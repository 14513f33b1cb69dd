import { join } from "node:path";
import { Http2UnaryChannel } from "../src/common/grpc/http2-unary-channel";
import { SyncInvokerServiceService } from "../src/gen/syncinvoker/v1/sync_invoker";
async function spawn(kind: string) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "srv.ts"), kind], { stdout: "pipe" });
  const port = Number(new TextDecoder().decode((await proc.stdout.getReader().read()).value).trim());
  return { proc, addr: `127.0.0.1:${port}` };
}
const kinds = ["default", "nochannelz"];
const srvs = await Promise.all(kinds.map(spawn));
const m = SyncInvokerServiceService.invoke;
const req = m.requestSerialize({ function: { name: "", source: "def main(ctx,x):\n return x\n", entry: "", filename: "" }, args: Buffer.from("1"), timeoutMs: 0 });
const chans = srvs.map((s) => new Http2UnaryChannel(s.addr, { kind: "insecure" }, ["syncinvoker"]));
const call = (c: Http2UnaryChannel) => c.unary(m.path, req, {}, Date.now() + 5000);
for (const c of chans) for (let i = 0; i < 500; i++) await call(c);
const res: Record<string, { p50: number[]; tput: number[] }> = { default: { p50: [], tput: [] }, nochannelz: { p50: [], tput: [] } };
for (let r = 0; r < 6; r++) {
  for (let k = 0; k < 2; k++) {
    const i = (k + r) % 2; const c = chans[i]!;
    const s: number[] = [];
    for (let n = 0; n < 2000; n++) { const t = performance.now(); await call(c); s.push(performance.now() - t); }
    s.sort((a, b) => a - b); res[kinds[i]!]!.p50.push(s[1000]! * 1000);
    let done = 0; const end = performance.now() + 1500;
    await Promise.all(Array.from({ length: 64 }, async () => { while (performance.now() < end) { await call(c); done++; } }));
    res[kinds[i]!]!.tput.push(done / 1.5);
  }
}
const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
for (const k of kinds) console.log(k, "p50", med(res[k]!.p50).toFixed(0), "µs; calls/s", med(res[k]!.tput).toFixed(0), res[k]!.tput.map((x) => x.toFixed(0)).join(","));
for (const c of chans) c.close();
for (const s of srvs) s.proc.kill();
