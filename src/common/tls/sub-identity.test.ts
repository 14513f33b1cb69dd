import { describe, expect, test } from "bun:test";
import { parseCallerKey, subIdentityOfUid } from "./sub-identity";

describe("sub-identities", () => {
  test("parseCallerKey takes what callerKeyOf makes (a client's, an admin's, a proxy's, a proxy's Unix user's) and nothing else", () => {
    for (const key of ["client/alice", "admin/ops", "proxy/gw", `proxy/gw/${subIdentityOfUid(1000)}`, "proxy/gw/uid:0"]) expect(parseCallerKey(key)).toBe(key);
    for (const key of ["coordinator", "worker/w1", "client/alice/uid:1000", "admin/ops/uid:0", "proxy/gw/uid:-1", "proxy/gw/uid:01", "proxy/gw/user:alice", "proxy/gw/uid:1/x", "proxy", "", "proxy/gw/uid:12345678901"]) {
      expect([key, parseCallerKey(key)]).toEqual([key, null]);
    }
  });
});
