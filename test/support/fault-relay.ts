import { connect, createServer, type Server, type Socket } from "node:net";

/** One client connection through the relay and its server side (null while blackholed or held: not connected yet). */
interface Pair {
  readonly client: Socket;
  server: Socket | null;
  /** Nothing more is forwarded either way (blackholed). */
  silent: boolean;
  /** The server's bytes are dropped (an answer lost after its request arrived); the client's still pass. */
  answerLost: boolean;
  /** Bytes held by a partition, delivered in order when it heals. */
  readonly toServer: Buffer[];
  readonly toClient: Buffer[];
  /** The client (server) closed while the partition held the link: the other side hears it at the heal. */
  clientGone: boolean;
  serverGone: boolean;
  /** The client's current request burst (bytes arriving less than BURST_GAP_MS apart) and its end timer. */
  burstBytes: number;
  burstTimer: ReturnType<typeof setTimeout> | null;
  /** The server's bytes held while a burst that may be the armed request's size has not ended (null: not held). */
  heldAnswer: Buffer[] | null;
}

/** Client bytes closer together than this belong to one request burst (dropAnswerAfterRequest). */
const BURST_GAP_MS = 20;

/** An armed dropAnswerAfterRequest: the request size that fires it, and who waits for it. */
interface RequestDrop {
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly resetAfterMs: number;
  readonly resolve: (fired: boolean) => void;
}

/**
 * FaultRelay is a TCP relay between a client and one server (a Worker, a Postgres), on loopback, that
 * injects the gray faults real networks have: a connection gone silent (the server's side closed, the
 * client's left open and answering nothing, as after a hard primary loss or a failover), an answer
 * lost after the request arrived (then the connection reset), a refusal of new connections, a
 * partition (nothing passes either way, nothing is lost: TCP delivers it all when the link heals,
 * as it does after a partition shorter than its retransmission give-up). Works on the bytes alone,
 * so TLS and HTTP/2 pass through untouched.
 */
export class FaultRelay {
  private readonly pairs = new Set<Pair>();
  private blackholed = false;
  private requestDrop: RequestDrop | null = null;
  /** A partition holds every byte and every new connection until heal(). */
  private held = false;
  /** New connections are reset at once until heal() (a severed link whose far end answers RST). */
  private refusing = false;
  /** Answers dropped and connections reset by dropAnswerAfterRequest (the test reads it). */
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
    if (this.refusing) return reset(client);
    const p: Pair = { client, server: null, silent: this.blackholed, answerLost: false, toServer: [], toClient: [], clientGone: false, serverGone: false, burstBytes: 0, burstTimer: null, heldAnswer: null };
    this.pairs.add(p);
    client.on("error", () => {});
    client.on("close", () => {
      if (p.burstTimer) clearTimeout(p.burstTimer);
      if (this.held && p.server) {
        p.clientGone = true; // the server hears of it when the partition heals
        return;
      }
      this.pairs.delete(p);
      p.server?.destroy();
    });
    client.on("data", (b: Buffer) => {
      if (p.silent) return;
      this.watchBurst(p, b.length);
      if (this.held || !p.server) p.toServer.push(b);
      else p.server.write(b);
    });
    if (this.blackholed) return; // accepted, then nothing: a silent peer
    if (!this.held) this.connectServer(p);
  }

  /** connectServer opens the pair's server side, first delivering what the client sent meanwhile. */
  private connectServer(p: Pair): void {
    const server = connect(this.target.port, this.target.host);
    p.server = server;
    for (const b of p.toServer.splice(0)) server.write(b);
    server.on("error", () => {});
    server.on("close", () => {
      if (this.held) {
        p.serverGone = true; // the client hears of it when the partition heals
        return;
      }
      if (!p.silent) p.client.destroy();
    });
    server.on("data", (b: Buffer) => {
      if (p.silent || p.answerLost) return;
      if (this.held) return void p.toClient.push(b);
      if (p.heldAnswer) return void p.heldAnswer.push(b);
      p.client.write(b);
    });
  }

  /**
   * watchBurst counts a request burst of the client's and fires an armed dropAnswerAfterRequest on
   * it. A drop with no upper bound fires as soon as the burst is large enough; one with a bound
   * holds the server's bytes from then until the burst ends (an answer may come before: it must
   * not slip through), then fires (the held bytes are the lost answer's) or lets them go.
   */
  private watchBurst(p: Pair, bytes: number): void {
    p.burstBytes += bytes;
    const d = this.requestDrop;
    if (d && p.burstBytes >= d.minBytes) {
      if (d.maxBytes === Infinity) return this.dropAnswerOf(p, d);
      p.heldAnswer ??= [];
    }
    if (p.burstTimer) clearTimeout(p.burstTimer);
    p.burstTimer = setTimeout(() => {
      p.burstTimer = null;
      const size = p.burstBytes;
      p.burstBytes = 0;
      const held = p.heldAnswer;
      p.heldAnswer = null;
      const now = this.requestDrop;
      if (now && size >= now.minBytes && size < now.maxBytes) return this.dropAnswerOf(p, now);
      if (!p.answerLost && !p.silent) for (const b of held ?? []) p.client.write(b);
    }, BURST_GAP_MS);
  }

  private dropAnswerOf(p: Pair, d: RequestDrop): void {
    if (this.requestDrop !== d || p.silent || p.answerLost) return;
    this.requestDrop = null;
    p.burstBytes = 0;
    p.answerLost = true;
    this.dropped++;
    setTimeout(() => {
      reset(p.client);
      p.server?.destroy();
      d.resolve(true);
    }, d.resetAfterMs);
  }

  /**
   * dropAnswerAfterRequest arms the relay once: on the first connection whose client sends a
   * request burst (bytes less than 20 ms apart) of `minBytes` up to (not including) `maxBytes`,
   * every byte the server sends from then on is dropped while the client's still pass (the request
   * arrives whole, its answer is lost), and `resetAfterMs` later the connection is reset. With
   * TLS the relay cannot read a request, only its size: a caller makes the requests it aims at
   * larger than any other. Resolves true when it fired, false when disarmed first.
   */
  dropAnswerAfterRequest(o: { minBytes: number; maxBytes?: number; resetAfterMs?: number }): Promise<boolean> {
    this.disarm();
    return new Promise((resolve) => {
      this.requestDrop = { minBytes: o.minBytes, maxBytes: o.maxBytes ?? Infinity, resetAfterMs: o.resetAfterMs ?? 300, resolve };
    });
  }

  /** disarm: an armed dropAnswerAfterRequest that has not fired will not (its promise resolves false). */
  disarm(): void {
    const d = this.requestDrop;
    this.requestDrop = null;
    d?.resolve(false);
  }

  /**
   * partition: nothing passes either way and new connections wait unconnected, with nothing lost,
   * until heal() delivers it all in order (closes included): what TCP does over a partition that
   * heals before it gives up. Both ends see only silence meanwhile; their own timeouts decide.
   */
  partition(): void {
    this.held = true;
  }

  /** refuse: new connections are reset at once until heal() (with cut(): a severed link). */
  refuse(): void {
    this.refusing = true;
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

  /**
   * heal: new connections pass again (the silent ones stay silent until their clients give up on
   * them); a partition delivers what it held, in order, and the closes it held.
   */
  heal(): void {
    this.blackholed = false;
    this.refusing = false;
    if (!this.held) return;
    this.held = false;
    for (const p of [...this.pairs]) {
      if (p.silent) continue;
      if (!p.server) {
        if (p.clientGone) this.pairs.delete(p);
        else this.connectServer(p);
        continue;
      }
      for (const b of p.toServer.splice(0)) p.server.write(b);
      for (const b of p.toClient.splice(0)) p.client.write(b);
      if (p.clientGone) {
        this.pairs.delete(p);
        p.server.end();
      }
      if (p.serverGone) p.client.end();
    }
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
