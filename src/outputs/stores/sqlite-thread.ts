/// <reference lib="webworker" />
import { parseExactJson } from "../../common/json/exact-json";
import { sqliteStoreError } from "./sqlite-table-store";
import { type FencedWrites, SqliteTables } from "./sqlite-tables";
import { SQLITE_THREAD_METHODS, type SqliteThreadReply, type SqliteThreadRequest } from "./sqlite-thread-protocol";

// The SQLite table store's thread: one SqliteTables, one request at a time, in order.
declare const self: Worker;
let tables: SqliteTables | undefined;
let description = "sqlite:?";
let openError: unknown;

self.onmessage = (ev: MessageEvent<SqliteThreadRequest>) => {
  const r = ev.data;
  let reply: SqliteThreadReply;
  try {
    if (r.op === "open") {
      description = `sqlite:${r.path}`;
      try {
        tables = new SqliteTables(r.path, r.busyTimeoutMs);
      } catch (e) {
        openError = e;
      }
      return;
    }
    if (r.op === "close") {
      tables?.close();
      tables = undefined;
      reply = { id: r.id, ok: true, text: "null" };
    } else {
      if (!tables) throw openError ?? new Error("the store is closed");
      let out: unknown;
      if (r.op === "commit") {
        const { writes, fence, issuedMs } = parseExactJson(r.writes) as unknown as FencedWrites;
        out = tables.commit(writes, fence, issuedMs);
      } else if (r.op === "commitGroup") {
        out = tables.commitGroup(
          r.groups.map((g) => parseExactJson(g) as unknown as FencedWrites),
          (e) => sqliteStoreError(e, description),
        );
      } else if (r.op === "call") {
        if (!SQLITE_THREAD_METHODS.includes(r.method)) throw new Error(`no such method: ${r.method}`);
        out = (tables[r.method] as (...a: unknown[]) => unknown).apply(tables, r.args as unknown[]) ?? null;
      } else {
        out = tables.read(r.table, r.options);
      }
      reply = { id: r.id, ok: true, text: JSON.stringify(out) };
    }
  } catch (e) {
    const err = sqliteStoreError(e, description);
    reply = { id: r.id, ok: false, code: err.code, message: err.message };
  }
  self.postMessage(reply);
};
