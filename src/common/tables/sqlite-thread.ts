/// <reference lib="webworker" />
import { parseExactJson } from "../json/exact-json";
import { sqliteStoreError } from "./sqlite-table-store";
import { SqliteTables } from "./sqlite-tables";
import type { TableWrite } from "./table-store";
import type { SqliteThreadReply, SqliteThreadRequest } from "./sqlite-thread-protocol";

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
      const out =
        r.op === "commit"
          ? tables.commit(parseExactJson(r.writes) as TableWrite[])
          : r.op === "commitGroup"
            ? tables.commitGroup(r.groups.map((g) => parseExactJson(g) as TableWrite[]), (e) => sqliteStoreError(e, description))
            : tables.read(r.table, r.options);
      reply = { id: r.id, ok: true, text: JSON.stringify(out) };
    }
  } catch (e) {
    const err = sqliteStoreError(e, description);
    reply = { id: r.id, ok: false, code: err.code, message: err.message };
  }
  self.postMessage(reply);
};
