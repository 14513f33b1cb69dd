/**
 * Import rules of the source tree (issue 13): what several components share lives beside them,
 * never inside one of them. Each rule names folders whose files (tests included) must not import
 * from another folder, by any path: static, type-only, re-export, dynamic `import()`, `require`.
 * Specifiers are read with TypeScript's own scanner, so a comment or a string is never taken for
 * an import, and a type-only import counts as much as any other.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import * as ts from "typescript";

const REPO = resolve(import.meta.dir, "..", "..");

interface ImportRule {
  readonly from: readonly string[];
  readonly forbidden: readonly string[];
  readonly why: string;
  /** Sources only: the folder's tests may drive it through the forbidden folder (a chain client through its backend). */
  readonly sourcesOnly?: boolean;
}

/** The components' layer folders (`src/worker/core/`, ...), found on disk so a new component is covered at once. */
function layerFolders(layer: "core" | "adapters" | "app"): string[] {
  return readdirSync(join(REPO, "src"), { withFileTypes: true })
    .filter((d) => d.isDirectory() && readdirSync(join(REPO, "src", d.name)).includes(layer))
    .map((d) => `src/${d.name}/${layer}/`);
}

export const IMPORT_RULES: readonly ImportRule[] = [
  {
    from: ["src/syncinvoker/", "src/cli/"],
    forbidden: ["src/worker/"],
    why: "the Sync Invoker and the CLI share the call runtime (src/runtime) and the outputs with their stores (src/outputs) with the Worker, not the Worker itself; a role's command lives in its own app folder",
  },
  {
    from: layerFolders("core"),
    forbidden: [...layerFolders("adapters"), ...layerFolders("app")],
    why: "a core decides and does no IO: it imports other cores, shared code and data (profiles, output specs), never an adapter or an app",
  },
  {
    from: ["src/runtime/chains/"],
    forbidden: ["src/runtime/io/"],
    why: "the IO subsystem's backends use the chain clients, never the other way: what both need (BackendError, JSON values) lives beside them in src/runtime",
    sourcesOnly: true,
  },
  {
    from: ["src/runtime/io/", "src/runtime/json/"],
    forbidden: ["src/runtime/executor/"],
    why: "the executor pool hands calls IO answers; the IO subsystem knows no executor (JsonValue and RawJson live in src/runtime/json)",
    sourcesOnly: true,
  },
  {
    from: ["src/sdk/batch-runner.ts"],
    forbidden: ["src/sdk/blockx-client/"], // a module, as imports name it (no extension)
    why: "the batch path asks the client for single runs through TaskRuns (src/sdk/task-run.ts): the client creates the batch runner, never the other way round",
  },
  {
    from: ["src/outputs/"],
    forbidden: ["src/worker/", "src/syncinvoker/", "src/cli/", "src/coordinator/"],
    why: "outputs and their stores serve the Worker and the CLI's readers alike: they know no role",
  },
];

function tsFiles(dir: string): string[] {
  if (/\.ts$/.test(dir)) return [dir];
  return readdirSync(join(REPO, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => /\.(ts|tsx|mts|cts)$/.test(f))
    .map((f) => join(dir, f));
}

/** importsOf: every module specifier of a file, resolved against the repository when relative. */
export function importsOf(file: string, text: string): { specifier: string; target: string | null }[] {
  return ts.preProcessFile(text, true, true).importedFiles.map(({ fileName }) => ({
    specifier: fileName,
    target: fileName.startsWith(".") ? relative(REPO, resolve(REPO, dirname(file), fileName)) + "/" : null,
  }));
}

/** violations: `file: "specifier"` for each import of a rule's folders that lands in its forbidden folder. */
export function violations(rule: ImportRule): string[] {
  const out: string[] = [];
  for (const file of rule.from.flatMap(tsFiles).filter((f) => !rule.sourcesOnly || !/\.test\.ts$/.test(f))) {
    for (const { specifier, target } of importsOf(file, readFileSync(join(REPO, file), "utf8"))) {
      if (target && rule.forbidden.some((f) => target.startsWith(f))) out.push(`${file}: "${specifier}"`);
    }
  }
  return out;
}

describe("import rules", () => {
  test("the scanner sees static, type-only, re-exported, dynamic and required imports, and nothing in comments or strings", () => {
    const text = [
      'import type { A } from "../worker/a";',
      'import { type B } from "../worker/b";',
      'export { C } from "../../src/worker/c";',
      'const d = await import("../worker/d");',
      'type E = import("../worker/e").E;',
      'const f = require("../worker/f");',
      '// import { G } from "../worker/g";',
      'const h = "from \\"../worker/h\\"";',
      'import { z } from "zod";',
      'import { gen } from "../gen/worker/v1/worker";',
    ].join("\n");
    const found = importsOf("src/cli/x.ts", text);
    expect(found.map((i) => i.specifier)).toEqual(["../worker/a", "../worker/b", "../../src/worker/c", "../worker/d", "../worker/e", "../worker/f", "zod", "../gen/worker/v1/worker"]);
    const intoWorker = found.filter((i) => i.target?.startsWith("src/worker/")).map((i) => i.specifier);
    // Any path that lands in src/worker counts, however it gets there; src/gen/worker is not src/worker.
    expect(intoWorker).toEqual(["../worker/a", "../worker/b", "../../src/worker/c", "../worker/d", "../worker/e", "../worker/f"]);
    expect(importsOf("src/cli/client/y.ts", 'import "../../worker/app/run";')[0]!.target).toBe("src/worker/app/run/");
    expect(importsOf("src/cli/y.ts", 'import "../workers-view";')[0]!.target).toBe("src/workers-view/");
  });

  for (const rule of IMPORT_RULES) {
    test(`no file under ${rule.from.join(" or ")} imports from ${rule.forbidden.join(" or ")} (${rule.why})`, () => {
      expect(rule.from.flatMap(tsFiles).length).toBeGreaterThan(0);
      expect(violations(rule)).toEqual([]);
    });
  }
});
