import { describe, expect, test } from "bun:test";
import { allowedHosts, decideAccess, isLoopbackHost, sameText, type AccessRequest } from "./ui-access";

const TOKEN = "t".repeat(32);
const policy = { token: TOKEN, hosts: allowedHosts("127.0.0.1", [], []), port: 9300 };
const req = (over: Partial<AccessRequest>): AccessRequest => ({ host: "127.0.0.1:9300", queryToken: null, cookieToken: null, authorization: null, ...over });

describe("decideAccess", () => {
  test("an operator opens the printed URL: allowed, and the cookie is set; later requests carry the cookie or a bearer token", () => {
    expect(decideAccess(req({ queryToken: TOKEN }), policy)).toEqual({ kind: "allow", setCookie: true });
    expect(decideAccess(req({ cookieToken: TOKEN, host: "localhost:9300" }), policy)).toEqual({ kind: "allow", setCookie: false });
    expect(decideAccess(req({ authorization: `Bearer ${TOKEN}`, host: "[::1]:9300" }), policy)).toEqual({ kind: "allow", setCookie: false });
  });

  test("a page of another site rebinding its name to 127.0.0.1 sends its own Host: refused before the token is looked at", () => {
    for (const host of ["rebound.attacker.example:9300", "127.0.0.1:9301", "127.0.0.1", "", null, "127.0.0.1:9300:1"]) {
      const d = decideAccess(req({ host, queryToken: TOKEN }), policy);
      expect(d).toMatchObject({ kind: "refuse", status: 403 });
    }
  });

  test("no token, or a wrong one, is 401 with the way in", () => {
    expect(decideAccess(req({}), policy)).toMatchObject({ kind: "refuse", status: 401, reason: expect.stringContaining("no dashboard token") });
    for (const wrong of [{ queryToken: "x" }, { cookieToken: TOKEN.slice(1) + "u" }, { authorization: "Bearer nope" }, { queryToken: "" }]) {
      expect(decideAccess(req(wrong), policy)).toMatchObject({ kind: "refuse", status: 401, reason: expect.stringContaining("wrong dashboard token") });
    }
  });

  test("allowedHosts: loopback always; the bind host; a wildcard bind adds this machine's names; UI_HOSTS adds more", () => {
    expect([...allowedHosts("10.0.0.5", ["Dash.Example"], ["ignored"])].sort()).toEqual(["127.0.0.1", "10.0.0.5", "[::1]", "dash.example", "localhost"].sort());
    expect(allowedHosts("", [], ["box", "fe80::1"]).has("[fe80::1]")).toBe(true);
    expect(allowedHosts("0.0.0.0", [], ["box"]).has("box")).toBe(true);
    expect(isLoopbackHost("127.0.0.2")).toBe(true);
    expect(isLoopbackHost("0.0.0.0")).toBe(false);
  });

  test("sameText: equal strings only; the empty token never matches", () => {
    expect(sameText("abc", "abc")).toBe(true);
    expect(sameText("abc", "abd")).toBe(false);
    expect(sameText("", "")).toBe(false);
  });
});
