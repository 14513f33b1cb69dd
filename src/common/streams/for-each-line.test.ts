import { expect, test } from "bun:test";
import { forEachLine } from "./for-each-line";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const s of chunks) c.enqueue(enc.encode(s));
      c.close();
    },
  });
}

test("lines come whole, blank ones skipped, the last one without a newline too", async () => {
  const lines: string[] = [];
  await forEachLine(streamOf(["a\nb", "c\n\n  \nd"]), (l) => void lines.push(l));
  expect(lines).toEqual(["a", "bc", "d"]);
});

test("with a bound, a longer line is cut and the rest of it skipped, however it arrives; the reader never holds more", async () => {
  const lines: [string, boolean][] = [];
  const endless = Array.from({ length: 100 }, () => "x".repeat(1000));
  await forEachLine(streamOf(["short\n", ...endless, "tail\nnext\n", "y".repeat(12), "\n"]), (l, cut) => void lines.push([l, cut]), 10);
  expect(lines).toEqual([
    ["short", false],
    ["xxxxxxxxxx", true],
    ["next", false],
    ["yyyyyyyyyy", true],
  ]);
});
