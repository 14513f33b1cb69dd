/**
 * Hostile HTTP at the dashboard (issue 51 item 8): `blockx ui` against a real cluster gets seeded
 * hostile requests, with its token and without, under its own Host and others: random and
 * traversing paths, task ids of every shape, huge query strings, every method with bodies, and,
 * over a raw socket, malformed request lines, oversized and countless headers, garbage bytes and
 * requests cut short. Each must end with a status (never 500, never a hang past its deadline), and
 * the dashboard must still answer its operator afterwards, its memory bounded.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { BlockxProcess } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { mulberry32 } from "../support/mulberry32";

const CASES = Number(process.env.FUZZ_CASES ?? 22) * 10;
const SEED = Number(process.env.FUZZ_SEED ?? 20261206);
const DEADLINE_MS = 10_000;

let cluster: TestCluster;
let ui: BlockxProcess;
let base = "";
let token = "";

beforeAll(async () => {
  cluster = new TestCluster();
  await cluster.worker({ EXECUTOR_COUNT: "1" });
  ui = BlockxProcess.spawn(["ui"], { ETCD_ENDPOINTS: cluster.etcd, UI_LISTEN: "127.0.0.1:0", UI_REFRESH_MS: "500" });
  for (;;) {
    const m = /^blockx ui: (http:\/\/\S+)$/m.exec(ui.stderr);
    if (m) {
      const u = new URL(m[1]!);
      token = u.searchParams.get("token")!;
      base = `${u.protocol}//${u.host}`;
      break;
    }
    if (ui.proc.exitCode !== null) throw new Error(`blockx ui exited: ${ui.stderr}`);
    await Bun.sleep(50);
  }
});
afterAll(async () => {
  ui?.stop("SIGKILL");
  await cluster?.stop();
});

const rssMb = () => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${ui.proc.pid}/status`, "utf8"))![1]) / 1024;

const HOSTILE_IDS = ["", "%00", "../../etc/passwd", "a".repeat(10_000), "<script>alert(1)</script>", "\u202e", "' OR 1=1 --", "%E0%A4%A", "%", "x/../../y", "🙂".repeat(500), "id?x=1#frag"];
const PATHS = ["/", "/api/overview", "/api/events", "/api/task", "/api/logs", "/api/task/", "//api//task", "/%2e%2e/%2e%2e/etc/passwd", "/api/../api/overview", "/.git/config", "/api/" + "x".repeat(5_000), "/\u0000", "/favicon.ico"];
const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "PROPFIND"];

async function request(rnd: () => number): Promise<{ what: string; status: number | "timeout" | "error"; detail: string }> {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const path = pick(PATHS);
  const query = rnd() < 0.5 ? `?id=${encodeURIComponent(pick(HOSTILE_IDS))}` : rnd() < 0.5 ? `?${"q=1&".repeat(2_000)}` : "";
  const method = rnd() < 0.6 ? "GET" : pick(METHODS);
  const headers: Record<string, string> = {};
  const withToken = rnd() < 0.8;
  if (withToken) headers.authorization = `Bearer ${rnd() < 0.9 ? token : token.slice(1) + "x"}`;
  if (rnd() < 0.2) headers.host = pick(["rebound.attacker.example", "127.0.0.1:1", "", "a".repeat(300)]);
  if (rnd() < 0.2) headers.cookie = pick(["blockx_ui=" + "x".repeat(4_000), "a=b; ".repeat(500), "\u00ff=\u00ff"]);
  const body = method !== "GET" && method !== "HEAD" && rnd() < 0.7 ? "x".repeat(Math.floor(rnd() * 100_000)) : undefined;
  const what = `${method} ${path}${query.slice(0, 40)} (token ${withToken}, host ${headers.host?.slice(0, 30) ?? "own"})`;
  try {
    const res = await fetch(base + path + query, { method, headers, body, signal: AbortSignal.timeout(DEADLINE_MS), redirect: "manual" });
    // A stream answers with headers at once and goes on: its status is the answer.
    void res.body?.cancel().catch(() => {});
    return { what, status: res.status, detail: "" };
  } catch (e) {
    const err = e as Error;
    return { what, status: err.name === "TimeoutError" ? "timeout" : "error", detail: err.message };
  }
}

/** raw sends bytes on a socket and reads until the server closes it or answers (first bytes), or the deadline. */
function raw(bytes: Buffer): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const s = connect(Number(port), hostname);
    let got = "";
    const done = (v: string) => {
      s.destroy();
      resolve(v);
    };
    const t = setTimeout(() => done(got || "no answer"), 3_000);
    s.on("connect", () => s.write(bytes));
    s.on("data", (d) => {
      got += d.toString("latin1");
      if (got.includes("\r\n")) {
        clearTimeout(t);
        done(got.split("\r\n")[0]!);
      }
    });
    s.on("error", (e) => (clearTimeout(t), done(`error ${e.message}`)));
    s.on("close", () => (clearTimeout(t), done(got || "closed")));
  });
}

describe("hostile HTTP at the dashboard", () => {
  test("requests of every shape end with a status (none 500, none hanging), and the operator is still answered", async () => {
    const rnd = mulberry32(SEED);
    const before = rssMb();
    const findings: string[] = [];
    const statuses = new Map<string, number>();
    for (let i = 0; i < CASES; i++) {
      const r = await request(rnd);
      statuses.set(String(r.status), (statuses.get(String(r.status)) ?? 0) + 1);
      if (r.status === "timeout" || r.status === 500) findings.push(`${r.what}: ${r.status} ${r.detail}`);
      if (ui.proc.exitCode !== null) throw new Error(`blockx ui exited after ${r.what}: ${ui.stderr.slice(-2_000)}`);
    }
    const rawCases = [
      Buffer.from("GARBAGE\r\n\r\n"),
      Buffer.from("GET /\r\n\r\n"),
      Buffer.from(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ${"a".repeat(200_000)}\r\n\r\n`),
      Buffer.from(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n${Array.from({ length: 5_000 }, (_, i) => `X-${i}: v`).join("\r\n")}\r\n\r\n`),
      Buffer.from(Array.from({ length: 4_096 }, () => Math.floor(rnd() * 256))),
      Buffer.from("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"), // cut short
      Buffer.from("POST /api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nxx\r\n"),
      Buffer.from("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n"),
      Buffer.from("GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n"),
      Buffer.from(`GET /${"%".repeat(10_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`),
    ];
    const rawAnswers: string[] = [];
    for (const b of rawCases) {
      rawAnswers.push(await raw(b));
      if (ui.proc.exitCode !== null) throw new Error(`blockx ui exited after a raw request: ${ui.stderr.slice(-2_000)}`);
    }
    for (const a of rawAnswers) if (/^HTTP\/1\.1 500/.test(a)) findings.push(`raw request answered ${a}`);
    // The operator is still answered.
    const ok = await fetch(`${base}/api/overview`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(DEADLINE_MS) });
    expect(ok.status).toBe(200);
    const grew = rssMb() - before;
    console.log(`dashboard fuzz: ${CASES} requests (${[...statuses].map(([k, v]) => `${k} ${v}`).join(", ")}), ${rawCases.length} raw (${rawAnswers.map((a) => a.slice(0, 24)).join(" | ")}); RSS ${grew >= 0 ? "+" : ""}${grew.toFixed(0)} MB`);
    expect(findings.slice(0, 10)).toEqual([]);
    expect(grew).toBeLessThan(256);
  }, 600_000);
});
