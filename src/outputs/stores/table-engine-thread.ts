/// <reference lib="webworker" />
import { parseExactJson } from "../../common/json/exact-json";
import type { FencedWrites } from "./group-commit-queue";
import type { TableStoreError } from "./table-store";
import { TABLE_THREAD_METHODS, type TableEngine, type TableThreadReply, type TableThreadRequest } from "./table-thread-protocol";

declare const self: Worker;

/**
 * serveTableEngine: the body of a table store's thread (sqlite-thread.ts, parquet-thread.ts): one
 * engine, one request at a time, in order (a read that awaits its files holds the next request
 * back, as a synchronous one would).
 */
export function serveTableEngine(describe: (args: unknown) => string, open: (args: unknown) => TableEngine, classify: (e: unknown, description: string) => TableStoreError): void {
  let engine: TableEngine | undefined;
  let description = "?";
  let openError: unknown;
  /** What the store was opened with; an open that failed (a file locked by another process at that moment) is tried again at the next request. */
  let openArgs: unknown;
  let closed = false;
  let queue: Promise<void> = Promise.resolve();

  const handle = async (r: TableThreadRequest): Promise<TableThreadReply | undefined> => {
    try {
      if (r.op === "open") {
        description = describe(r.args);
        openArgs = r.args;
        try {
          engine = open(r.args);
        } catch (e) {
          openError = e;
        }
        return undefined;
      }
      if (r.op === "close") {
        closed = true;
        engine?.close();
        engine = undefined;
        return { id: r.id, ok: true, text: "null" };
      }
      if (!engine && !closed && openArgs !== undefined) {
        try {
          engine = open(openArgs);
          openError = undefined;
        } catch (e) {
          openError = e;
        }
      }
      if (!engine) throw openError ?? new Error("the store is closed");
      let out: unknown;
      if (r.op === "commit") {
        const { writes, fence, issuedMs } = parseExactJson(r.writes) as unknown as FencedWrites;
        out = engine.commit(writes, fence, issuedMs);
      } else if (r.op === "commitGroup") {
        out = engine.commitGroup(
          r.groups.map((g) => parseExactJson(g) as unknown as FencedWrites),
          (e) => classify(e, description),
        );
      } else if (r.op === "call") {
        if (!TABLE_THREAD_METHODS.includes(r.method)) throw new Error(`no such method: ${r.method}`);
        out = (engine[r.method] as (...a: unknown[]) => unknown).apply(engine, r.args as unknown[]) ?? null;
      } else {
        out = await engine.read(r.table, r.options);
      }
      return { id: r.id, ok: true, text: JSON.stringify(out) };
    } catch (e) {
      const err = classify(e, description);
      return { id: r.id, ok: false, code: err.code, message: err.message };
    }
  };

  self.onmessage = (ev: MessageEvent<TableThreadRequest>) => {
    queue = queue.then(async () => {
      const reply = await handle(ev.data);
      if (reply) self.postMessage(reply);
    });
  };
}
