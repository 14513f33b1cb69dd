import { chmodSync, chownSync } from "node:fs";
import type { Socket, UnixSocketListener } from "bun";
import { concatBytes, encodeFrameParts, FrameDecoder, FrameError, MAX_FRAME_BYTES } from "./frame-codec";
import { type ExecutorMessage, type PoolMessage, type WireResult } from "./protocol";
import { RawJson } from "../json/raw-json";

/** Frames of one tick up to this size are joined into one write. */
const COALESCE_MAX_BYTES = 64 * 1024;

/** ConnectionHandlers: what the pool hears from the executors' connections. */
export interface ConnectionHandlers {
  /** One decoded frame. The first one of a connection must be its executor's Hello. */
  message(conn: ExecutorConnection, m: ExecutorMessage): void;
  /** A frame that does not decode: nothing more is read from this connection's chunk. */
  malformed(conn: ExecutorConnection, err: unknown): void;
  /** The socket closed or failed. */
  closed(conn: ExecutorConnection): void;
}

/**
 * ExecutorConnection is the framed Unix-socket protocol (4-byte length + JSON, see frame-codec.ts)
 * to one executor: decoding what it sends, and writing what the pool sends. Frames sent within one
 * tick go out in one write (small ones joined, large ones not copied again); a partial write keeps
 * the rest in a backlog flushed on drain (Bun's socket `write` may write partially).
 */
export class ExecutorConnection {
  private readonly decoder = new FrameDecoder();
  /** Frames waiting for the socket to drain. */
  private readonly backlog: Uint8Array[] = [];
  /** Frames written in this tick, flushed together. */
  private corked: Uint8Array[] = [];
  /** The pool's slot index of the executor, once its Hello was accepted; null before. */
  executorIndex: number | null = null;

  private constructor(private readonly socket: Socket<unknown>) {}

  /**
   * listen opens the pool's socket at `socketPath` (owner `runAs` when set, mode 0600) and makes an
   * ExecutorConnection of every connection to it.
   */
  static listen(socketPath: string, runAs: { readonly uid: number; readonly gid: number } | null, handlers: ConnectionHandlers): UnixSocketListener<unknown> {
    const listener = Bun.listen<unknown>({
      unix: socketPath,
      socket: {
        open: (socket) => {
          socket.data = new ExecutorConnection(socket);
        },
        data: (socket, chunk) => (socket.data as ExecutorConnection).received(chunk, handlers),
        drain: (socket) => (socket.data as ExecutorConnection).flushBacklog(),
        close: (socket) => handlers.closed(socket.data as ExecutorConnection),
        error: (socket) => handlers.closed(socket.data as ExecutorConnection),
      },
    });
    if (runAs) chownSync(socketPath, runAs.uid, runAs.gid);
    chmodSync(socketPath, 0o600);
    return listener;
  }

  /**
   * send queues a frame; frames of one tick go out in one write. A frame over MAX_FRAME_BYTES is
   * refused here (FrameError), before the executor's reader would refuse it by dying.
   */
  send(m: PoolMessage): void {
    const parts = encodeFrameParts(m, holdsRawJson(m));
    const bytes = parts.reduce((n, p) => n + p.byteLength, 0);
    if (bytes - 4 > MAX_FRAME_BYTES) throw new FrameError(`a ${m.type} frame of ${bytes - 4} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit`);
    const first = this.corked.length === 0;
    for (const p of parts) this.corked.push(p);
    if (first) queueMicrotask(() => this.uncork());
  }

  /** end closes the connection. */
  end(): void {
    this.socket.end();
  }

  private received(chunk: Uint8Array, handlers: ConnectionHandlers): void {
    let messages: unknown[];
    try {
      messages = this.decoder.push(chunk);
    } catch (err) {
      handlers.malformed(this, err);
      return;
    }
    for (const m of messages) handlers.message(this, m as ExecutorMessage);
  }

  private uncork(): void {
    const parts = this.corked;
    this.corked = [];
    // Runs of small parts go out joined, one write each; a large part (a block, a shared source) as it is, not copied again.
    let run: Uint8Array[] = [];
    let runBytes = 0;
    for (const p of parts) {
      if (run.length > 0 && (p.byteLength > COALESCE_MAX_BYTES || runBytes + p.byteLength > COALESCE_MAX_BYTES)) {
        this.write(concatBytes(run));
        run = [];
        runBytes = 0;
      }
      if (p.byteLength > COALESCE_MAX_BYTES) this.write(p);
      else {
        run.push(p);
        runBytes += p.byteLength;
      }
    }
    if (run.length > 0) this.write(concatBytes(run));
  }

  private write(data: Uint8Array): void {
    if (this.backlog.length > 0) {
      this.backlog.push(data);
      return;
    }
    const written = this.socket.write(data);
    if (written < data.length) this.backlog.push(data.subarray(Math.max(0, written)));
  }

  private flushBacklog(): void {
    while (this.backlog.length > 0) {
      const data = this.backlog[0]!;
      const written = this.socket.write(data);
      if (written < data.length) {
        this.backlog[0] = data.subarray(Math.max(0, written));
        return;
      }
      this.backlog.shift();
    }
  }
}

/** holdsRawJson: whether a message carries RawJson values to splice in (an answer's bytes, a shared source). */
function holdsRawJson(m: PoolMessage): boolean {
  if (m.type === "ResumeCall") return m.results.some(isRawAnswer);
  return m.type === "ExecuteCall" && (m.source instanceof RawJson || (m.prefetched !== undefined && isRawAnswer(m.prefetched.result)));
}

function isRawAnswer(r: WireResult): boolean {
  return "value" in r && r.value instanceof RawJson;
}
