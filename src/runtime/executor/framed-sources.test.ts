import { describe, expect, test } from "bun:test";
import { FramedSources } from "./framed-sources";
import { RawJson } from "../json/raw-json";

describe("FramedSources", () => {
  const big = `def main(ctx, x):\n    return x\n# ${"é".repeat(100)}\n`;

  test("a held large source is encoded once: every frame gets the same bytes, its JSON", () => {
    const f = new FramedSources(50);
    f.hold("d1", big);
    f.hold("d1", big);
    const a = f.sourceField("d1", big);
    const b = f.sourceField("d1", big);
    expect(a).toBeInstanceOf(RawJson);
    expect(b).toBe(a);
    expect(new TextDecoder().decode((a as RawJson).bytes)).toBe(JSON.stringify(big));
  });

  test("it is dropped when its last holder releases it; the next holder gets a fresh encoding", () => {
    const f = new FramedSources(50);
    f.hold("d1", big);
    f.hold("d1", big);
    const first = f.sourceField("d1", big);
    f.release("d1");
    expect(f.size).toBe(1);
    f.release("d1");
    expect(f.size).toBe(0);
    expect(f.sourceField("d1", big)).toBe(big); // not held: the text itself
    f.release("d1"); // an unknown digest: nothing happens
    f.hold("d1", big);
    expect(f.sourceField("d1", big)).not.toBe(first);
  });

  test("a small source is neither held nor encoded apart", () => {
    const f = new FramedSources(50);
    f.hold("d2", "def main(ctx):\n    return 1\n");
    expect(f.size).toBe(0);
    expect(f.sourceField("d2", "def main(ctx):\n    return 1\n")).toBe("def main(ctx):\n    return 1\n");
  });
});
