import { connect, createServer, type Server, type Socket } from "node:net";

/** One client connection through the relay and its server side (null while blackholed: never connected). */
interface Pair {
  readonly client: Socket;
  server: Socket | null;
  /** Bytes the client has sent through this connection. */
  clientBytes: number;
  /** Nothing more is forwarded either way (blackholed, or its answer is being dropped). */
  silent: boolean;
}

/**
 * FaultRelay is a TCP relay between a client and one server (a Worker, a Postgres), on loopback, that
 * injects the gray faults real networks have: a connection gone silent (the server's side closed, the
 * client's left open and answering nothing, as after a hard primary loss or a failover), an answer
 * lost after the request arrived (then the connection reset), a refusal of new connections. Works
 * on the bytes alone, so TLS and HTTP/2 pass through untouched.
 */
export class FaultRelay {
  private readonly pairs = new Set<Pair>();
  private blackholed = false;
  private armed: { readonly afterClientBytes: number; readonly resetAfterMs: number; fired: boolean; resolve: () => void } | null = null;
  /** Answers dropped and connections reset by dropAnswer (the test reads it). */
  dropped = 0;

  private constructor(
    private readonly server: Server,
    readonly addr: string,
    private readonly target: { host: string; port: number },
  ) {}

  /** start listens on 127.0.0.1 (an ephemeral port) and relays every connection to `target` (host:port). */
  static async start(target: string): Promise<FaultRelay> {
    const i = target.lastIndexOf(":");
    const t = { host: target.slice(0, i).replace(/^\[|\]$/g, ""), port: Number(target.slice(i + 1)) };
    let relay!: FaultRelay;
    const server = createServer((client) => relay.accept(client));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    relay = new FaultRelay(server, `127.0.0.1:${port}`, t);
    return relay;
  }

  get port(): number {
    return Number(this.addr.split(":")[1]);
  }

  private accept(client: Socket): void {
    const p: Pair = { client, server: null, clientBytes: 0, silent: this.blackholed };
    this.pairs.add(p);
    client.on("error", () => {});
    client.on("close", () => {
      this.pairs.delete(p);
      p.server?.destroy();
    });
    if (this.blackholed) return; // accepted, then nothing: a silent peer
    const server = connect(this.target.port, this.target.host);
    p.server = server;
    server.on("error", () => {});
    server.on("close", () => {
      if (!p.silent) client.destroy();
    });
    client.on("data", (b: Buffer) => {
      if (p.silent) return;
      p.clientBytes += b.length;
      server.write(b);
    });
    server.on("data", (b: Buffer) => {
      if (p.silent) return;
      const a = this.armed;
      if (a && !a.fired && p.clientBytes >= a.afterClientBytes) {
        // The request went through; its answer (and whatever follows) does not, then the connection resets.
        a.fired = true;
        p.silent = true;
        this.dropped++;
        setTimeout(() => {
          reset(client);
          server.destroy();
          a.resolve();
        }, a.resetAfterMs);
        return;
      }
      client.write(b);
    });
  }

  /**
   * dropAnswer arms the relay once: on the first connection whose client has sent at least
   * `afterClientBytes` (past a TLS handshake: the request itself), the server's next bytes are
   * dropped, and `resetAfterMs` later the connection is reset. Resolves when that happened.
   */
  dropAnswer(afterClientBytes: number, resetAfterMs = 300): Promise<void> {
    return new Promise((resolve) => {
      this.armed = { afterClientBytes, resetAfterMs, fired: false, resolve };
    });
  }

  /**
   * blackhole: every open connection goes silent (its server side is closed: the server ends its
   * session; the client side stays open and hears nothing), and new ones are accepted and never
   * answered, until heal().
   */
  blackhole(): void {
    this.blackholed = true;
    for (const p of this.pairs) {
      p.silent = true;
      p.server?.destroy();
    }
  }

  /** heal: new connections pass again (the silent ones stay silent until their clients give up on them). */
  heal(): void {
    this.blackholed = false;
  }

  /** cut resets every open connection (a severed link: both ends hear it at once). */
  cut(): void {
    for (const p of this.pairs) {
      reset(p.client);
      p.server?.destroy();
    }
  }

  get connections(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    this.cut();
    for (const p of this.pairs) p.client.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** reset closes a socket with a TCP reset where the runtime can (the peer hears ECONNRESET), else plainly. */
function reset(s: Socket): void {
  const r = (s as Socket & { resetAndDestroy?: () => void }).resetAndDestroy;
  if (typeof r === "function") r.call(s);
  else s.destroy();
}
