import { etcdFetch } from "../../common/etcd/etcd-http";
import { createWriteStream, existsSync, lstatSync, type WriteStream } from "node:fs";
import { forEachLine } from "../../common/streams/for-each-line";
import type { ChildLaunch } from "../core/child-launch";
import { terminalLine, type TerminalLevel } from "../core/terminal-line";

export type { TerminalLevel } from "../core/terminal-line";

const SELF_PDEATHSIG = existsSync("/usr/bin/setpriv") ? ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--"] : [];

/**
 * DevChild runs one child of `blockx dev`: every line of its stdout and stderr goes to its log
 * file, lines at the terminal's level to `echo`, and readiness is reported once. The child
 * gets its own process group, so a Ctrl-C on the terminal reaches `blockx dev` alone, which
 * stops the children in order; `setpriv --pdeathsig KILL` (util-linux) ends it should dev itself
 * be killed.
 */
export class DevChild {
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  private readonly proc: ReturnType<typeof Bun.spawn>;
  private readonly log: WriteStream;
  private ready = false;

  constructor(
    readonly id: string,
    launch: ChildLaunch,
    opts: {
      readonly logFile: string;
      readonly baseEnv: Readonly<Record<string, string | undefined>>;
      readonly terminalLevel: TerminalLevel;
      readonly echo: (line: string) => void;
      readonly onReady: (endpoint: string) => void;
    },
  ) {
    this.log = createWriteStream(opts.logFile, { flags: "a" });
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.baseEnv)) if (v !== undefined) env[k] = v;
    Object.assign(env, launch.env);
    this.proc = Bun.spawn([...SELF_PDEATHSIG, ...launch.argv], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true });
    const onLine = (fromStderr: boolean) => (line: string) => {
      this.log.write(line + "\n");
      const shown = terminalLine(id, line, fromStderr, opts.terminalLevel);
      if (shown !== null) opts.echo(shown);
      if (launch.readiness.kind === "grpcLog" && !this.ready && !fromStderr) {
        const addr = grpcListeningAddr(line);
        if (addr !== null) this.markReady(addr, opts.onReady);
      }
    };
    const out = forEachLine(this.proc.stdout as ReadableStream<Uint8Array>, onLine(false));
    const err = forEachLine(this.proc.stderr as ReadableStream<Uint8Array>, onLine(true));
    this.exited = this.proc.exited.then(async (code) => {
      await Promise.allSettled([out, err]);
      await new Promise<void>((r) => this.log.end(r));
      const signal = this.proc.signalCode === null ? null : String(this.proc.signalCode);
      return { code: signal ? null : code, signal };
    });
    if (launch.readiness.kind !== "grpcLog") void this.pollReadiness(launch.readiness, opts.onReady);
  }

  get pid(): number {
    return this.proc.pid;
  }

  signal(signal: "SIGTERM" | "SIGKILL"): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
  }

  private markReady(endpoint: string, onReady: (endpoint: string) => void): void {
    this.ready = true;
    onReady(endpoint);
  }

  private async pollReadiness(r: Exclude<ChildLaunch["readiness"], { kind: "grpcLog" }>, onReady: (endpoint: string) => void): Promise<void> {
    let done = false;
    void this.exited.then(() => (done = true));
    while (!done && !this.ready) {
      if (r.kind === "socketFile") {
        if (isSocket(r.path)) return this.markReady(r.path, onReady);
      } else {
        try {
          const res = await etcdFetch(r.endpoint, "/health", r.tls, 1_000);
          const body = (await res.json()) as { health?: unknown };
          if (body.health === "true" || body.health === true) return this.markReady(r.endpoint, onReady);
        } catch {
          // Not listening yet.
        }
      }
      await Bun.sleep(100);
    }
  }
}

function isSocket(path: string): boolean {
  try {
    return lstatSync(path).isSocket();
  } catch {
    return false;
  }
}

/** grpcListeningAddr reads the bound address off a "grpc listening" log line (0.0.0.0 -> 127.0.0.1). */
export function grpcListeningAddr(line: string): string | null {
  if (!line.includes("grpc listening")) return null;
  try {
    const j = JSON.parse(line) as { msg?: unknown; addr?: unknown };
    if (j.msg !== "grpc listening" || typeof j.addr !== "string") return null;
    return j.addr.replace(/^0\.0\.0\.0:/, "127.0.0.1:");
  } catch {
    return null;
  }
}
