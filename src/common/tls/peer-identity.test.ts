import { describe, expect, test } from "bun:test";
import { identityFromSubjectAltName, identityFromUri, identityKey, identityUri, parseIdentityKey } from "./peer-identity";

describe("identityFromSubjectAltName", () => {
  test("a client certificate names its client; the other SANs do not matter", () => {
    expect(identityFromSubjectAltName("DNS:localhost, URI:blockx://role/client/alice, IP Address:127.0.0.1")).toEqual({ role: "client", name: "alice" });
  });

  test("server roles may go without a name", () => {
    expect(identityFromSubjectAltName("URI:blockx://role/coordinator")).toEqual({ role: "coordinator", name: "" });
    expect(identityFromSubjectAltName("URI:blockx://role/worker/host-1")).toEqual({ role: "worker", name: "host-1" });
  });

  test("no blockx URI, two of them, an unknown role, a nameless client or a bad name give no identity", () => {
    for (const san of [
      undefined,
      "",
      "DNS:localhost",
      "URI:blockx://role/client/alice, URI:blockx://role/admin/alice",
      "URI:blockx://role/root/alice",
      "URI:blockx://role/client",
      "URI:blockx://role/admin/",
      "URI:blockx://role/client/a/b",
      "URI:blockx://role/client/al ice",
      `URI:blockx://role/client/${"x".repeat(65)}`,
    ]) {
      expect(identityFromSubjectAltName(san)).toBeNull();
    }
  });
});

describe("identity keys", () => {
  test("identityKey and parseIdentityKey are inverse; identityUri is what certificates carry", () => {
    for (const id of [
      { role: "client", name: "alice" },
      { role: "admin", name: "ops" },
      { role: "coordinator", name: "" },
    ] as const) {
      expect(parseIdentityKey(identityKey(id))).toEqual(id);
      expect(identityFromUri(identityUri(id))).toEqual(id);
    }
    expect(parseIdentityKey("client")).toBeNull();
    expect(parseIdentityKey("../client/x")).toBeNull();
  });
});
