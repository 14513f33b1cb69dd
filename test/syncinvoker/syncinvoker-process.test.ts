/**
 * The Sync Invoker end to end: the compiled binary (`blockx syncinvoker`) with real executor
 * processes, FUNCTIONS_DIR, the local test chain, and a grpc-js client. Every response's
 * durations are checked: cpu_ms + io_ms <= total_ms and queue_ms <= total_ms.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockxProcess } from "../support/blockx-process";
import { checkDurations, expectRefused, SyncInvokerClient } from "../support/syncinvoker-client";
import { suiteEnv } from "../support/suite-tls";

setDefaultTimeout(60_000);

/** A world-readable scratch directory: executors may run as `nobody`. */
const dir = mkdtempSync(join(tmpdir(), "blockx-si-test-"));
chmodSync(dir, 0o777);
const functionsDir = join(dir, "functions");

const BLOCK_STATS = `
def main(ctx, input):
    block = ctx.io("localtestservice", "eth_getBlockByNumber", {"chain": input["chain"], "number": input["number"], "full": True})
    return {"number": int(block["number"], 16), "txs": len(block["transactions"])}
`;

/** Blocks until the gate file exists (deterministic "busy executor"); marks that it ran. */
const HOLD = `
import os, time
def main(ctx, input):
    if input.get("marker"):
        open(input["marker"], "w").close()
    while not os.path.exists(input["gate"]):
        time.sleep(0.01)
    return "released"
`;
import { eventually } from "../support/eventually";

let proc: BlockxProcess;
let client: SyncInvokerClient;
let metricsAddr = "";

async function metric(name: string): Promise<string> {
  return await (await fetch(`http://${metricsAddr}/metrics`)).text().then((t) => t.split("\n").filter((l) => l.startsWith(name)).join("\n"));
}

async function queueDepth(): Promise<number> {
  const line = await metric("blockx_syncinvoker_queue_depth ");
  return Number(line.split(" ")[1]);
}

beforeAll(async () => {
  const { mkdirSync } = await import("node:fs");
  mkdirSync(functionsDir);
  writeFileSync(join(functionsDir, "block_stats.py"), BLOCK_STATS);
  writeFileSync(join(functionsDir, "hold.py"), HOLD);
  writeFileSync(join(functionsDir, "divide.py"), "def main(ctx, x):\n    return 1 / x\n");
  proc = BlockxProcess.spawn(["syncinvoker"], {
    // These tests hold and observe calls through files in a host folder (gates, markers), which
    // the executor sandbox hides by design; test/security/sandbox.test.ts covers the sandbox.
    EXECUTOR_SANDBOX: "off",
    SYNCINVOKER_LISTEN: "127.0.0.1:0",
    SYNCINVOKER_QUEUE_MAX: "2",
    EXECUTOR_COUNT: "2",
    FUNCTIONS_DIR: functionsDir,
    BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:0",
    BLOCKX_LOG_LEVEL: "info",
  });
  client = new SyncInvokerClient(await proc.grpcAddr());
  metricsAddr = String((await proc.waitForLog((l) => l.msg === "metrics listening")).addr);
});

afterAll(async () => {
  client?.close();
  await proc?.stop("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("Invoke", () => {
  test("a function by name reads a block through read-only IO and returns its value with a call id and durations", async () => {
    const r = await client.invoke({ name: "block_stats", args: JSON.stringify({ chain: "eth", number: 1000 }) });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toBeUndefined();
    const value = JSON.parse(r.value.result.toString());
    expect(value.number).toBe(1000);
    expect(typeof value.txs).toBe("number");
    expect(r.value.callId).toMatch(/^si-[0-9a-f]{16}$/);
    const d = checkDurations(r.value.durations);
    expect(d.totalMs).toBeGreaterThan(0);
  });

  test("inline source with JSON args; empty args are null", async () => {
    const r = await client.invoke({ source: "def go(ctx, x):\n    return {'got': x}\n", entry: "go", args: '[1, "two", {"three": 3}]' });
    if (!r.ok) throw new Error(r.details);
    expect(JSON.parse(r.value.result.toString())).toEqual({ got: [1, "two", { three: 3 }] });
    checkDurations(r.value.durations);
    const empty = await client.invoke({ source: "def main(ctx, x):\n    return x is None\n", args: "" });
    expect(empty.ok && JSON.parse(empty.value.result.toString())).toBe(true);
  });

  test("a user exception is an OK response with error USER_ERROR, the message and the user's traceback", async () => {
    const source = "def helper(x):\n    return 1 / x\n\ndef main(ctx, x):\n    return helper(x)\n";
    const r = await client.invoke({ source, args: "0" });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toMatchObject({ code: "USER_ERROR", message: "ZeroDivisionError: division by zero" });
    expect(r.value.error!.traceback).toContain("line 2, in helper");
    expect(r.value.error!.traceback).toContain("line 5, in main");
    expect(r.value.result.length).toBe(0);
    checkDurations(r.value.durations);
  });

  test("a call over its budget (timeout_ms) ends with error BUDGET_EXCEEDED", async () => {
    const r = await client.invoke({ source: "def main(ctx, x):\n    while True:\n        pass\n", timeoutMs: 200 });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error?.code).toBe("BUDGET_EXCEEDED");
    expect(r.value.error?.message).toContain("budget of 200 ms");
    const d = checkDurations(r.value.durations);
    expect(d.cpuMs).toBeGreaterThanOrEqual(200); // it is stopped once its CPU is over the budget
    expect(d.ioMs).toBe(0);
  });

  test("a write IO op is refused with PERMISSION_DENIED naming the op, even when the function catches the error", async () => {
    const source = [
      "def main(ctx, x):",
      "    try:",
      "        ctx.io('localtestservice', 'eth_sendRawTransaction', {'chain': 'eth', 'data': '0x00'})",
      "    except Exception as e:",
      "        return 'swallowed: ' + str(e)",
      "    return 'wrote'",
    ].join("\n");
    for (const call of [client.invoke({ source }), client.debugInvoke({ source })]) {
      expectRefused(await call, grpc.status.PERMISSION_DENIED, "localtestservice.eth_sendRawTransaction", "read-only");
    }
  });

  test("an unknown function name is NOT_FOUND, listing what FUNCTIONS_DIR has", async () => {
    expectRefused(await client.invoke({ name: "no_such_function" }), grpc.status.NOT_FOUND, 'no function "no_such_function"', "block_stats");
  });

  test("args that are not JSON, and other malformed requests, are INVALID_ARGUMENT with the reason", async () => {
    const cases: [Parameters<SyncInvokerClient["invoke"]>[0], string][] = [
      [{ name: "block_stats", args: "{chain: eth}" }, "args: not valid JSON"],
      [{ name: "block_stats", source: "def main(c, i): pass" }, "either name or source"],
      [{}, "name or source is required"],
      [{ source: "def main(c, i): pass", entry: "not-an-identifier" }, "not a Python identifier"],
      [{ source: "def main(c, i): pass", timeoutMs: 10_000_000 }, "timeout_ms: at most"],
    ];
    for (const [req, reason] of cases) expectRefused(await client.invoke(req), grpc.status.INVALID_ARGUMENT, reason);
  });

  test("a source error reaches the caller as the function's error: SYNTAX_ERROR with line and column, ENTRY_NOT_FOUND, BAD_SIGNATURE", async () => {
    const syntax = await client.invoke({ source: "def main(ctx, x)\n    return 1\n" });
    expect(syntax.ok && syntax.value.error).toMatchObject({ code: "SYNTAX_ERROR" });
    const missing = await client.invoke({ source: "def other(ctx, x):\n    return 1\n" });
    expect(missing.ok && missing.value.error?.code).toBe("ENTRY_NOT_FOUND");
    const arity = await client.invoke({ source: "def main(ctx):\n    return 1\n" });
    expect(arity.ok && arity.value.error?.code).toBe("BAD_SIGNATURE");
    for (const r of [syntax, missing, arity]) if (r.ok) checkDurations(r.value.durations);
  });
});

describe("other clients and faults", () => {
  const PY_SUPPORT = join(import.meta.dir, "..", "support");
  async function py(script: string, ...args: string[]) {
    const p = Bun.spawn(["/usr/bin/python3", join(PY_SUPPORT, script), ...args], { env: { PATH: "/usr/bin:/bin", ...suiteEnv("client") }, stdout: "pipe", stderr: "pipe" });
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    if (!out.trim()) throw new Error(`${script} printed nothing: ${err}`);
    return JSON.parse(out);
  }

  test("a client that is not grpc-js (Debian's python3-grpcio) invokes and reads health", async () => {
    const r = await py("py_syncinvoker_client.py", client.addr, "def main(ctx, x):\n    return x * 2\n", "21");
    expect(r).toMatchObject({ ok: true, result: "42", error: null });
    checkDurations(r.durations);
    const failed = await py("py_syncinvoker_client.py", client.addr, "def main(ctx, x):\n    raise KeyError(x)\n", '"k"');
    expect(failed).toMatchObject({ ok: true, result: "", error: { code: "USER_ERROR", message: "KeyError: 'k'" } });
    const bad = await py("py_syncinvoker_client.py", client.addr, "def main(ctx, x):\n    return x\n", "not json");
    expect(bad).toMatchObject({ ok: false, code: "INVALID_ARGUMENT" });
    expect(await py("py_grpc_client.py", client.addr, "health", "syncinvoker.v1.SyncInvokerService")).toEqual({ ok: true, status: "SERVING" });
  });

  test("an executor dying under the call is UNAVAILABLE (a system failure, retry), and the invoker serves on", async () => {
    expectRefused(await client.invoke({ source: "import os\ndef main(ctx, x):\n    os._exit(3)\n" }), grpc.status.UNAVAILABLE, "EXECUTOR_CRASHED");
    await eventually(async () => {
      const again = await client.invoke({ source: "def main(ctx, x):\n    return 'fine'\n" });
      return again.ok && again.value.error === undefined;
    }, { what: "the invoker answers again", timeoutMs: 30_000 });
  });

  test("sub-calls by name run with the same read-only IO (a nested write is refused too)", async () => {
    const r = await client.invoke({ source: "def main(ctx, x):\n    return ctx.call('block_stats', {'chain': 'eth', 'number': x})\n", args: "5" });
    if (!r.ok) throw new Error(r.details);
    expect(JSON.parse(r.value.result.toString()).number).toBe(5);
    checkDurations(r.value.durations);
    const nested = "def main(ctx, x):\n    return ctx.call({'source': \"def main(ctx, x):\\n    return ctx.io('localtestservice', 'eth_sendRawTransaction', {})\\n\"})\n";
    const w = await client.invoke({ source: nested });
    expect(!w.ok && w.code).toBe(grpc.status.PERMISSION_DENIED);
  });

  test("a caller that cancels its running call stops it in the executor", async () => {
    // Spins on CPU with a 60 s budget: only the cancel can end it before the waits below give
    // up. The interrupt that stops it in the executor runs its `finally`, which makes a
    // directory: a side effect of the executor really stopping the code, which the invoker's
    // own gauge (it drops when the executor answers) cannot show. The marker is one C call
    // on pre-bound names, so the executor's repeated interrupts cannot land before it.
    const stopped = join(dir, "spin-stopped");
    const started = join(dir, "spin-started");
    const source = [
      "import os",
      "def main(ctx, x):",
      "    mark, path = os.mkdir, x[1]",
      "    mark(x[0])",
      "    try:",
      "        while True:",
      "            sum(range(1000))",
      "    finally:",
      "        mark(path)",
    ].join("\n");
    const call = client.client.invoke({ function: { name: "", source, entry: "", filename: "" }, args: Buffer.from(JSON.stringify([started, stopped])), timeoutMs: 60_000 }, () => {});
    await eventually(async () => (await metric("blockx_syncinvoker_running_calls ")).endsWith(" 1"), { what: "the call runs", timeoutMs: 30_000 });
    // Admitted is not yet running: each request is its own executor owner here (BLOCKX_INSECURE), so it may wait for a fresh executor.
    await eventually(() => existsSync(started), { what: "the code runs in the executor", timeoutMs: 30_000 });
    expect(existsSync(stopped)).toBe(false);
    call.cancel();
    await eventually(async () => (await metric("blockx_syncinvoker_running_calls ")).endsWith(" 0"), { what: "the executor is free again", timeoutMs: 30_000 });
    await eventually(() => existsSync(stopped), { what: "the spinning code is stopped in the executor", timeoutMs: 30_000 });
    expect(await metric('blockx_syncinvoker_invocations_total{rpc="Invoke",outcome="CANCELLED"}')).toContain("} 1");
  });
});

describe("DebugInvoke", () => {
  test("returns the result plus stdout and stderr apart, ctx.log lines, the IO trace and the durations", async () => {
    const source = [
      "import sys",
      "def main(ctx, x):",
      "    print('hello from stdout')",
      "    print('and stderr', file=sys.stderr)",
      "    ctx.log('fetching', level='info')",
      "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'eth', 'number': x, 'full': False})",
      "    try:",
      "        ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'eth', 'number': -1})",
      "    except Exception as e:",
      "        ctx.log('bad block: ' + e.type, level='warning')",
      "    return b['number']",
    ].join("\n");
    const r = await client.debugInvoke({ source, args: "42" });
    if (!r.ok) throw new Error(r.details);
    expect(JSON.parse(r.value.result.toString())).toBe("0x2a");
    expect(r.value.error).toBeUndefined();
    // stdout and stderr apart (issue 14: stderr was always empty, merged into stdout).
    expect(r.value.stdout).toBe("hello from stdout\n");
    expect(r.value.stderr).toBe("and stderr\n");
    expect(r.value.logs.map((l) => [l.level, l.message])).toEqual([
      ["info", "fetching"],
      ["warning", "bad block: InvalidParams"],
    ]);
    expect(r.value.ioTrace).toHaveLength(2);
    expect(r.value.ioTrace[0]).toMatchObject({ backend: "localtestservice", op: "eth_getBlockByNumber", cacheHit: false, error: "" });
    expect(r.value.ioTrace[0]!.bytes).toBeGreaterThan(100);
    expect(r.value.ioTrace[1]!.error).toContain("InvalidParams");
    expect(r.value.callId).toMatch(/^si-/);
    checkDurations(r.value.durations);
  });

  test("a failing call carries its traceback in both error.traceback and traceback, with what it printed before", async () => {
    const source = "def main(ctx, x):\n    print('before')\n    raise ValueError('bad input ' + str(x))\n";
    const r = await client.debugInvoke({ source, args: "7" });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toMatchObject({ code: "USER_ERROR", message: "ValueError: bad input 7" });
    expect(r.value.traceback).toContain("line 3, in main");
    expect(r.value.traceback).toBe(r.value.error!.traceback);
    expect(r.value.stdout).toBe("before\n");
    checkDurations(r.value.durations);
  });

  test("a function by name: its traceback names <name>.py, not <blockx:main@digest>", async () => {
    const r = await client.debugInvoke({ name: "divide", args: "0" });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toMatchObject({ code: "USER_ERROR", message: "ZeroDivisionError: division by zero" });
    expect(r.value.traceback).toContain('File "divide.py", line 2, in main');
    expect(r.value.traceback).not.toContain("<blockx:");
  });
});

describe("IO: the Worker's IO subsystem, read-only, with the chain backends", () => {
  test("DebugInvoke of a function reading the same final block twice shows the second read as a cache hit", async () => {
    // A chain name no other test reads: its head is unknown until this call's first read.
    const source = [
      "def main(ctx, x):",
      "    a = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'cachetest', 'number': x, 'full': False})",
      "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'cachetest', 'number': x, 'full': False})",
      "    return [a['number'], a == b]",
    ].join("\n");
    const r = await client.debugInvoke({ source, args: "1234" });
    if (!r.ok) throw new Error(r.details);
    expect(JSON.parse(r.value.result.toString())).toEqual(["0x4d2", true]);
    expect(r.value.ioTrace.map((t) => [t.op, t.cacheHit, t.error])).toEqual([
      ["eth_getBlockByNumber", false, ""],
      ["eth_getBlockByNumber", true, ""],
    ]);
    expect(r.value.ioTrace[1]!.bytes).toBe(r.value.ioTrace[0]!.bytes);
    checkDurations(r.value.durations);
    // A block within the finality depth of the head (20000000 - 12) is never cached.
    const recent = await client.debugInvoke({ source, args: "19999999" });
    expect(recent.ok && recent.value.ioTrace.map((t) => t.cacheHit)).toEqual([false, false]);
    expect(await metric("blockx_io_cache_hits_total")).toMatch(/^blockx_io_cache_hits_total [1-9]/m);
    expect(await metric("blockx_io_requests_total")).toContain('backend="localtestservice",op="eth_getBlockByNumber",via="cache"');
  });

  test("ctx.blockdb, ctx.rpc and ctx.meta work through the Sync Invoker (the chain backends are registered)", async () => {
    const source = [
      "def main(ctx, x):",
      "    block = ctx.blockdb.block(x, full=False, chain='eth')",
      "    receipts = ctx.blockdb.receipts(x, chain='eth')",
      "    by_rpc = ctx.rpc.call('eth_getBlockByNumber', hex(x), False, chain='eth')",
      "    names = [f['name'] for f in ctx.meta.list_functions()['functions']]",
      "    return {'number': block['number'], 'same': block == by_rpc, 'receipts': len(receipts) == len(block['transactions']), 'names': sorted(names)}",
    ].join("\n");
    const r = await client.debugInvoke({ source, args: "4321" });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toBeUndefined();
    expect(JSON.parse(r.value.result.toString())).toEqual({ number: "0x10e1", same: true, receipts: true, names: ["block_stats", "divide", "hold"] });
    expect(r.value.ioTrace.map((t) => `${t.backend}.${t.op}`)).toEqual(["blockdb.block", "blockdb.receipts", "rpc.call", "meta.listFunctions"]);
  });

  test("a write through the rpc backend (op send) is PERMISSION_DENIED naming the op, and never reaches the chain", async () => {
    const source = [
      "def main(ctx, x):",
      "    try:",
      "        ctx.io('rpc', 'send', {'chain': 'eth', 'method': 'eth_sendRawTransaction', 'params': ['0x00']})",
      "    except Exception as e:",
      "        return 'swallowed: ' + str(e)",
      "    return 'sent'",
    ].join("\n");
    expectRefused(await client.invoke({ source }), grpc.status.PERMISSION_DENIED, "rpc.send", "read-only");
    expect(await metric("blockx_io_requests_total")).toContain('backend="rpc",op="send",via="refused"');
    expect(await metric("blockx_io_backend_requests_total")).not.toContain('op="send"');
  });
});

describe("Precheck", () => {
  test("a good function passes with its digest and entry", async () => {
    const r = await client.precheck({ name: "block_stats" });
    if (!r.ok) throw new Error(r.details);
    expect(r.value).toMatchObject({ ok: true, diagnostics: [], entry: "main" });
    expect(r.value.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  test("a syntax error is reported with its line and column", async () => {
    const r = await client.precheck({ source: "def main(ctx, x):\n    y = (1 +\n    return y\n" });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.ok).toBe(false);
    expect(r.value.diagnostics).toHaveLength(1);
    expect(r.value.diagnostics[0]).toMatchObject({ severity: "error", code: "SYNTAX_ERROR", line: 2 });
    expect(r.value.diagnostics[0]!.column).toBeGreaterThan(0);
    expect(r.value.diagnostics[0]!.message).toContain("line 2");
  });

  test("a missing entry is reported, naming the functions the source does define", async () => {
    const r = await client.precheck({ source: "def mian(ctx, x):\n    return 1\n" });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.ok).toBe(false);
    expect(r.value.diagnostics).toEqual([expect.objectContaining({ severity: "error", code: "ENTRY_NOT_FOUND", message: expect.stringContaining("mian") })]);
  });

  test("a wrong signature is reported at the def's line and column", async () => {
    const r = await client.precheck({ source: "import json\n\nclass X:\n    pass\n\n  \ndef main(ctx):\n    return 1\n".replace("  \n", "\n") });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.ok).toBe(false);
    expect(r.value.diagnostics).toEqual([expect.objectContaining({ severity: "error", code: "BAD_SIGNATURE", line: 7, column: 1 })]);
    const kw = await client.precheck({ source: "def main(ctx, x, *, mode):\n    return 1\n" });
    expect(kw.ok && kw.value.diagnostics[0]).toMatchObject({ code: "BAD_SIGNATURE", message: expect.stringContaining("'mode'") });
  });

  test("several problems at once: a compile error, a bad signature and an async entry awaiting something other than ctx", async () => {
    const source = ["import asyncio", "async def main(ctx):", "    await asyncio.sleep(1)", "    return await ctx.io('a', 'b')", "return 1"].join("\n");
    const r = await client.precheck({ source });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.ok).toBe(false);
    const found = r.value.diagnostics.map((d) => [d.severity, d.code, d.line, d.column]);
    expect(found).toContainEqual(["error", "SYNTAX_ERROR", 5, 1]);
    expect(found).toContainEqual(["error", "BAD_SIGNATURE", 2, 1]);
    expect(found).toContainEqual(["warning", "ASYNC_AWAIT_NON_CTX", 3, 5]);
  });

  test("runs nothing: a module whose top level writes a file leaves no file (Invoke of the same module does write it)", async () => {
    const target = join(dir, `precheck-side-effect-${Date.now()}`);
    const source = `open(${JSON.stringify(target)}, "w").write("the module body ran")\n\ndef main(ctx, x):\n    return 1\n`;
    const r = await client.precheck({ source });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.ok).toBe(true);
    expect(r.value.diagnostics).toEqual([expect.objectContaining({ severity: "warning", code: "MODULE_LEVEL_CODE", line: 1 })]);
    expect(existsSync(target)).toBe(false);
    // The check above can fail: running the module really creates the file.
    const ran = await client.invoke({ source });
    expect(ran.ok && ran.value.error).toBeUndefined();
    expect(existsSync(target)).toBe(true);
  });

  test("an unknown name is NOT_FOUND; a malformed ref is INVALID_ARGUMENT", async () => {
    const nf = await client.precheck({ name: "nope" });
    expect(!nf.ok && nf.code).toBe(grpc.status.NOT_FOUND);
    const bad = await client.precheck({});
    expect(!bad.ok && bad.code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});

describe("admission (2 executors, queue of 2)", () => {
  test("busy executors queue requests; past the bound RESOURCE_EXHAUSTED; a queued request whose deadline passes is dropped without running", async () => {
    const gate = join(dir, "gate-1");
    const marker = (n: string) => join(dir, `ran-${n}`);
    // Two calls hold both executors until the gate opens.
    const holders = [client.invoke({ name: "hold", args: JSON.stringify({ gate }) }), client.invoke({ name: "hold", args: JSON.stringify({ gate }) })];
    await eventually(async () => (await metric("blockx_syncinvoker_running_calls ")).endsWith(" 2"), { what: "both executors busy", timeoutMs: 30_000 });

    // timeout_ms bounds the wait in the queue too: dropped at 300 ms, DEADLINE_EXCEEDED, never run.
    const expired = await client.invoke({ name: "hold", args: JSON.stringify({ gate, marker: marker("expired") }), timeoutMs: 300 });
    expectRefused(expired, grpc.status.DEADLINE_EXCEEDED, "did not run");

    // The caller's gRPC deadline bounds it as well (the client sees DEADLINE_EXCEEDED either way).
    const late = await client.invoke({ name: "hold", args: JSON.stringify({ gate, marker: marker("late") }), deadlineMs: 500 });
    expect(!late.ok && late.code).toBe(grpc.status.DEADLINE_EXCEEDED);

    // The invoker drops `late` when the client's cancel or its own copy of the deadline reaches it,
    // which can be a moment after the client gave up: until then it still holds a place in the queue.
    await eventually(async () => (await queueDepth()) === 0, { what: "the expired and late requests dropped", timeoutMs: 30_000 });

    // Fill the queue, then one more is refused at once.
    const queued = [0, 1].map((i) => client.invoke({ name: "hold", args: JSON.stringify({ gate, marker: marker(`queued-${i}`) }), timeoutMs: 30_000 }));
    await eventually(async () => (await queueDepth()) === 2, { what: "two requests queued", timeoutMs: 30_000 });
    expectRefused(await client.invoke({ name: "hold", args: JSON.stringify({ gate }) }), grpc.status.RESOURCE_EXHAUSTED, "SYNCINVOKER_QUEUE_MAX");

    writeFileSync(gate, "");
    for (const r of await Promise.all([...holders, ...queued])) {
      if (!r.ok) throw new Error(r.details);
      expect(JSON.parse(r.value.result.toString())).toBe("released");
      checkDurations(r.value.durations);
    }
    const q = await queued[0]!;
    expect(q.ok && q.value.durations!.queueMs).toBeGreaterThan(0);
    expect(existsSync(marker("queued-0")) && existsSync(marker("queued-1"))).toBe(true);
    // The dropped requests never ran, even after executors freed up.
    await eventually(async () => (await queueDepth()) === 0, { what: "the queue drained", timeoutMs: 30_000 });
    expect(existsSync(marker("expired"))).toBe(false);
    expect(existsSync(marker("late"))).toBe(false);

    const counts = await metric("blockx_syncinvoker_invocations_total");
    expect(counts).toContain('rpc="Invoke",outcome="QUEUE_FULL"} 1');
    expect(counts).toContain('rpc="Invoke",outcome="DEADLINE_EXCEEDED"}');
    expect(await metric("blockx_syncinvoker_request_duration_seconds_count")).toContain('rpc="Invoke"');
  });
});

describe("durations of a call with a known CPU spin and a known IO latency", () => {
  test("cpu_ms covers the spin, io_ms the injected backend latency, total_ms both (lower bounds only)", async () => {
    // Its own invoker: every local-chain request waits 150 ms first (LOCALTESTSERVICE_LATENCY_MS).
    const slow = BlockxProcess.spawn(["syncinvoker"], { SYNCINVOKER_LISTEN: "127.0.0.1:0", EXECUTOR_COUNT: "1", LOCALTESTSERVICE_LATENCY_MS: "150", BLOCKX_LOG_LEVEL: "info" });
    const slowClient = new SyncInvokerClient(await slow.grpcAddr());
    try {
      // 300 ms of the thread's CPU clock (the clock the executor measures), then two reads of
      // blocks nobody read before (two cache misses, one after the other).
      const source = [
        "import time",
        "def main(ctx, x):",
        "    t = time.thread_time()",
        "    while time.thread_time() - t < 0.3:",
        "        pass",
        "    a = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'eth', 'number': x, 'full': False})",
        "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'eth', 'number': x + 1, 'full': False})",
        "    return [int(a['number'], 16), int(b['number'], 16)]",
      ].join("\n");
      const r = await slowClient.invoke({ source, args: "4242", timeoutMs: 10_000 });
      if (!r.ok) throw new Error(r.details);
      expect(r.value.error).toBeUndefined();
      expect(JSON.parse(r.value.result.toString())).toEqual([4242, 4243]);
      const d = checkDurations(r.value.durations);
      // The parts are clamped into the whole only by the microseconds the two clocks disagree.
      expect(d.cpuMs).toBeGreaterThanOrEqual(299);
      expect(d.ioMs).toBeGreaterThanOrEqual(300);
      expect(d.totalMs).toBeGreaterThanOrEqual(d.queueMs + 299 + 300);
    } finally {
      slowClient.close();
      await slow.stop("SIGKILL");
    }
  });
});

describe("lifecycle", () => {
  test("SIGTERM: new requests are refused, the running call finishes and answers, the process exits 0", async () => {
    const gate = join(dir, "gate-term");
    const running = client.invoke({ name: "hold", args: JSON.stringify({ gate }) });
    await eventually(async () => (await metric("blockx_syncinvoker_running_calls ")).endsWith(" 1"), { what: "the call runs", timeoutMs: 30_000 });
    proc.proc.kill("SIGTERM");
    await proc.waitForLog((l) => l.msg === "shutting down");
    const refused = await client.invoke({ source: "def main(ctx, x):\n    return 1\n" });
    expect(!refused.ok && refused.code).toBe(grpc.status.UNAVAILABLE);
    writeFileSync(gate, "");
    const r = await running;
    expect(r.ok && JSON.parse(r.value.result.toString())).toBe("released");
    expect(await proc.exited).toBe(0);
  });
});
