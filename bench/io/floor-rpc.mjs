// bench/io/floor-rpc.mjs: the floor of bench/io/ganache-backfill.ts. A plain Node script that
// makes the same JSON-RPC calls per block as the bench's function (full block, parent block,
// block hashes + one receipt per transaction, Transfer logs), one HTTP request per call, with
// the same number of blocks in flight, and computes the same row. Prints {seconds, count}.
//   node bench/io/floor-rpc.mjs URL FROM TO CONCURRENCY TOPIC
const [url, fromS, toS, concS, topic] = process.argv.slice(2);
const from = Number(fromS), to = Number(toS), concurrency = Number(concS);
let id = 1;
async function rpc(method, ...params) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: id++, method, params }) });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}
const hex = (n) => "0x" + n.toString(16);
async function row(n) {
  const b = await rpc("eth_getBlockByNumber", hex(n), true);
  const parent = n > 0 ? await rpc("eth_getBlockByNumber", hex(n - 1), true) : null;
  const light = await rpc("eth_getBlockByNumber", hex(n), false);
  const receipts = await Promise.all(light.transactions.map((h) => rpc("eth_getTransactionReceipt", h)));
  const logs = await rpc("eth_getLogs", { fromBlock: hex(n), toBlock: hex(n), topics: [topic] });
  return {
    block: n,
    tx_count: b.transactions.length,
    gas_used: receipts.reduce((s, r) => s + parseInt(r.gasUsed, 16), 0),
    transfers: logs.length,
    dt: parseInt(b.timestamp, 16) - (parent ? parseInt(parent.timestamp, 16) : 0),
  };
}
const t0 = performance.now();
let next = from, count = 0;
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (next <= to) {
    const n = next++;
    await row(n);
    count++;
  }
}));
console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000, count }));
