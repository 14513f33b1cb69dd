import { describe, expect, test } from "bun:test";
import { postgresStore } from "./postgres-table-store";
import { sqlitePathOf, sqliteStore } from "./sqlite-table-store";
import { KNOWN_SCHEMES, STORE_KINDS, storeKindOf } from "./store-kinds";

describe("store kinds", () => {
  test("TABLE_STORE_URL's scheme chooses the store; empty is the SQLite file TABLE_STORE_PATH; an unknown scheme is none", () => {
    expect(storeKindOf("")).toBe(sqliteStore);
    expect(storeKindOf("  ")).toBe(sqliteStore);
    expect(storeKindOf("postgres://u:p@h:5432/d")).toBe(postgresStore);
    expect(storeKindOf("POSTGRESQL://h/d")).toBe(postgresStore);
    expect(storeKindOf("sqlite:///srv/t.sqlite")).toBe(sqliteStore);
    expect(storeKindOf("postgress://u:p@h/d")).toBeNull();
    expect(storeKindOf("/srv/t.sqlite")).toBeNull();
    // Every scheme names one kind.
    const schemes = STORE_KINDS.flatMap((k) => k.schemes);
    expect(new Set(schemes).size).toBe(schemes.length);
    expect(KNOWN_SCHEMES).toContain("postgres://");
  });

  test("a sqlite: URL names its file: absolute after three slashes, relative without", () => {
    expect(sqlitePathOf("sqlite:///srv/tables/t.sqlite")).toBe("/srv/tables/t.sqlite");
    expect(sqlitePathOf("sqlite:t.sqlite")).toBe("t.sqlite");
    expect(sqlitePathOf("sqlite:///srv/a%20b.sqlite")).toBe("/srv/a b.sqlite");
  });
});
