/**
 * scripts/patch-gen.ts: run by `make proto` after `buf generate`. ts-proto's `forceLong=number`
 * turns every decoded int64 into a number through a string (`Number(int64.toString())`), while the
 * wire reader (@bufbuild/protobuf) hands it a bigint, which Number() converts directly: 0.03 µs a
 * field instead of 0.13. A TaskSnapshot carries nine 64-bit integers, and decoding snapshots was
 * nearly a fifth of a batch client's CPU, of which this conversion was almost half. The range checks stay as generated.
 * Fails when the generated text is not the one expected (a ts-proto upgrade: look again).
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const GEN = join(import.meta.dir, "..", "src", "gen");
const GENERATED = "  const num = globalThis.Number(int64.toString());\n";
const PATCHED =
  "  // scripts/patch-gen.ts: the wire reader's bigint converts directly, without a string.\n" +
  '  const num = typeof int64 === "bigint" ? globalThis.Number(int64) : globalThis.Number(int64.toString());\n';

let patched = 0;
for (const file of readdirSync(GEN, { recursive: true, encoding: "utf8" })) {
  if (!file.endsWith(".ts")) continue;
  const path = join(GEN, file);
  const text = readFileSync(path, "utf8");
  if (!text.includes("function longToNumber(")) continue;
  if (text.includes(PATCHED)) continue;
  if (!text.includes(GENERATED)) throw new Error(`${path}: longToNumber is not as ts-proto 2.18 generated it; review scripts/patch-gen.ts`);
  writeFileSync(path, text.replace(GENERATED, PATCHED));
  patched++;
}
console.log(`patch-gen: longToNumber patched in ${patched} file(s)`);
