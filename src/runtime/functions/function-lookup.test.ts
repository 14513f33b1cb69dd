import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { inlineFunction } from "./function-lookup";

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

describe("inlineFunction", () => {
  test("every source gets its own sha256, whether its digest is remembered, evicted or never kept", () => {
    // 40 sources of one length (more than are remembered), asked for in turns, then a large one.
    const sources = Array.from({ length: 40 }, (_, i) => `def main(ctx, x):\n    return ${String(i).padStart(3, "0")}\n`);
    for (let round = 0; round < 3; round++) {
      for (const source of round === 1 ? [...sources].reverse() : sources) {
        const r = inlineFunction(source, "main");
        if (!r.ok) throw new Error(r.message);
        expect(r.fn.digest).toBe(sha256(source));
      }
    }
    const large = `def main(ctx, x):\n    return 1\n${"#".repeat(70 * 1024)}\n`;
    for (let i = 0; i < 2; i++) {
      const r = inlineFunction(large, "");
      expect(r.ok && r.fn.digest).toBe(sha256(large));
    }
  });

  test("a bad entry is refused before anything is hashed", () => {
    const r = inlineFunction("def main(ctx, x):\n    return x\n", "not an identifier");
    expect(r).toEqual({ ok: false, reason: "BAD_ENTRY", message: expect.stringContaining("entry") });
  });
});
