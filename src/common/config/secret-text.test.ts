import { describe, expect, test } from "bun:test";
import { redactSecrets, redactUrlCredentials, rememberSecret, shownSecret } from "./secret-text";

describe("secret text", () => {
  test("redactUrlCredentials replaces a URL's password and its secret query parameters, and keeps the rest readable", () => {
    expect(redactUrlCredentials("store postgres://blockx:hunter2@db:5432/x unavailable")).toBe("store postgres://blockx:***@db:5432/x unavailable");
    expect(redactUrlCredentials("postgresql://blockx@db/x?sslmode=require&password=hunter2&application_name=w")).toBe("postgresql://blockx@db/x?sslmode=require&password=***&application_name=w");
    expect(redactUrlCredentials("https://node.example/rpc?apikey=k3y")).toBe("https://node.example/rpc?apikey=***");
    expect(redactUrlCredentials("postgres://blockx@db/x")).toBe("postgres://blockx@db/x");
  });

  test("shownSecret quotes a URL with its password replaced; a value that is not a clean URL, or a `value` secret, only by its length", () => {
    expect(shownSecret("url", "postgress://blockx:hunter2@db/x")).toBe('"postgress://blockx:***@db/x"');
    expect(shownSecret("url", "postgres://blockx:hun ter2@db/x")).toBe("a value of 31 characters (not shown: it may hold a secret)");
    expect(shownSecret("url", "postgres://blockx:hun/ter2@db/x")).not.toContain("ter2");
    expect(shownSecret("value", "hunter2")).not.toContain("hunter2");
  });

  test("redactSecrets hides every remembered value wherever a message quotes it, as is, JSON-escaped or percent-encoded", () => {
    rememberSecret("value", 'pa"ss\\word');
    rememberSecret("url", "sqlite://u:s3cr3t-pw@host/x");
    expect(redactSecrets('{"msg":"auth failed: pa\\"ss\\\\word"}')).toBe('{"msg":"auth failed: ***"}');
    expect(redactSecrets("opened sqlite:u:s3cr3t-pw@host/x")).toBe("opened sqlite:u:***@host/x");
    expect(redactSecrets(`x ${encodeURIComponent('pa"ss\\word')} y`)).toBe("x *** y");
    // A url secret leaves its host readable; short values are never remembered (they would blank out words).
    rememberSecret("value", "ab");
    expect(redactSecrets("about sqlite host")).toBe("about sqlite host");
  });
});
