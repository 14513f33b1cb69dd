import * as grpc from "@grpc/grpc-js";
import { protoCases, type MutationKind } from "./proto-mutations";

/** A gRPC method as ts-proto describes it (the generated `...Service` objects). */
export interface MethodDef {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  readonly requestSerialize: (value: never) => Buffer;
  readonly requestDeserialize: (value: Buffer) => unknown;
}

export interface MethodReport {
  readonly path: string;
  cases: number;
  /** Answers by status name (OK included: an empty or mangled message may decode to a valid request). */
  readonly codes: Map<string, number>;
  /** What broke a rule: an unhandled error (UNKNOWN), a refusal with no words, a hang past the deadline. */
  readonly findings: string[];
}

const identity = (b: Buffer) => b;

/**
 * fill: the method's request with every scalar set (strings to text, numbers to 1, booleans true),
 * so the mutations start from a message that reaches past the decoder into the handler.
 */
function fill(v: unknown): unknown {
  if (Array.isArray(v)) return v;
  if (v === null || typeof v !== "object") return v;
  const o = v as Record<string, unknown>;
  for (const [k, x] of Object.entries(o)) {
    if (typeof x === "string") o[k] = k.toLowerCase().includes("json") || k.toLowerCase().includes("input") || k.toLowerCase().includes("args") ? '{"a":[1,2,{"b":null}]}' : `fuzz-${k}`;
    else if (typeof x === "number") o[k] = 1;
    else if (typeof x === "boolean") o[k] = true;
  }
  return o;
}

/** seedsOf: valid encodings of a method's request to mutate: empty, and every scalar set. */
export function seedsOf(m: MethodDef): Buffer[] {
  const empty = Buffer.alloc(0);
  try {
    return [empty, m.requestSerialize(fill(m.requestDeserialize(empty)) as never)];
  } catch {
    return [empty];
  }
}

/**
 * fuzzMethod sends `cases` hostile request bodies to one method (raw bytes: no client-side
 * serialiser in the way), each with its own deadline, and reads how each ended. A server stream
 * is cancelled once its first message arrives (a watch that would go on is not a hang).
 */
export async function fuzzMethod(client: grpc.Client, m: MethodDef, o: { seed: number; cases: number; deadlineMs: number; metadata?: () => grpc.Metadata }): Promise<MethodReport> {
  const report: MethodReport = { path: m.path, cases: 0, codes: new Map(), findings: [] };
  if (m.requestStream) return report; // no BlockX method takes a client stream
  for (const c of protoCases(o.seed, seedsOf(m), o.cases)) {
    const started = performance.now();
    const { code, details } = await (m.responseStream ? serverStream(client, m.path, c.bytes, o) : unary(client, m.path, c.bytes, o));
    const tookMs = performance.now() - started;
    report.cases++;
    const name = grpc.status[code] ?? String(code);
    report.codes.set(name, (report.codes.get(name) ?? 0) + 1);
    note(report, c.kind, code, details, tookMs, o.deadlineMs, m.responseStream);
  }
  return report;
}

function note(r: MethodReport, kind: MutationKind, code: grpc.status, details: string, tookMs: number, deadlineMs: number, stream: boolean): void {
  const where = `${r.path} (${kind})`;
  if (code === grpc.status.UNKNOWN) r.findings.push(`${where}: UNKNOWN (an unhandled error in the handler): ${details.slice(0, 200)}`);
  else if (code === grpc.status.INTERNAL) r.findings.push(`${where}: INTERNAL (a malformed request is the caller's error, not the server's): ${details.slice(0, 200)}`);
  else if (code === grpc.status.DEADLINE_EXCEEDED && !stream) r.findings.push(`${where}: no answer within ${deadlineMs} ms`);
  else if (code !== grpc.status.OK && details.trim() === "") r.findings.push(`${where}: ${grpc.status[code]} with no message`);
  if (tookMs > deadlineMs + 5_000) r.findings.push(`${where}: the call ended ${Math.round(tookMs)} ms after it began, past its deadline`);
}

function unary(client: grpc.Client, path: string, body: Buffer, o: { deadlineMs: number; metadata?: () => grpc.Metadata }): Promise<{ code: grpc.status; details: string }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, body, o.metadata?.() ?? new grpc.Metadata(), { deadline: Date.now() + o.deadlineMs }, (err) => {
      resolve(err ? { code: err.code ?? grpc.status.UNKNOWN, details: err.details ?? err.message } : { code: grpc.status.OK, details: "" });
    });
  });
}

function serverStream(client: grpc.Client, path: string, body: Buffer, o: { deadlineMs: number; metadata?: () => grpc.Metadata }): Promise<{ code: grpc.status; details: string }> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: { code: grpc.status; details: string }) => {
      if (done) return;
      done = true;
      resolve(r);
    };
    const call = client.makeServerStreamRequest(path, identity, identity, body, o.metadata?.() ?? new grpc.Metadata(), { deadline: Date.now() + o.deadlineMs });
    call.on("data", () => {
      finish({ code: grpc.status.OK, details: "" });
      call.cancel();
    });
    call.on("error", (e: grpc.ServiceError) => finish({ code: e.code ?? grpc.status.UNKNOWN, details: e.details ?? e.message }));
    call.on("status", (s: grpc.StatusObject) => finish({ code: s.code, details: s.details }));
  });
}

/** methodsOf: the methods of a generated service object. */
export function methodsOf(service: Record<string, unknown>): MethodDef[] {
  return Object.values(service).filter((m): m is MethodDef => typeof m === "object" && m !== null && "path" in m);
}
