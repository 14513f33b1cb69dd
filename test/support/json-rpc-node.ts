export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/**
 * JsonRpcNode: a real Ethereum node (ganache, anvil) the tests run as a process on a loopback port,
 * spoken to by plain fetch (independent of BlockX's own client). Subclasses start their program
 * with `launch`.
 */
export abstract class JsonRpcNode {
  private proc: ReturnType<typeof Bun.spawn> | undefined;
  private nextId = 1;

  protected constructor(readonly port: number) {}

  /**
   * launch runs `argv` (tied to the test process: `setpriv --pdeathsig KILL`, a test that dies
   * takes it along) and returns once the node answers `probe`, with that answer; throws with its
   * stderr if it exits or does not answer within `timeoutMs`.
   */
  protected async launch(name: string, argv: readonly string[], probe: string, timeoutMs: number): Promise<Json> {
    this.proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", ...argv], { stdout: "ignore", stderr: "pipe" });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await this.rpc(probe);
      } catch (e) {
        if (this.proc.exitCode !== null || Date.now() > deadline) {
          const err = await new Response(this.proc.stderr as ReadableStream).text().catch(() => "");
          await this.stop();
          throw new Error(`${name} did not start on port ${this.port}: ${(e as Error).message} ${err}`);
        }
        await Bun.sleep(50);
      }
    }
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** rpc: one JSON-RPC request to the node. Params are positional. */
  async rpc(method: string, ...params: Json[]): Promise<Json> {
    const res = await fetch(this.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: this.nextId++, method, params }) });
    const body = (await res.json()) as { result?: Json; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result ?? null;
  }

  async head(): Promise<number> {
    return parseInt((await this.rpc("eth_blockNumber")) as string, 16);
  }

  async stop(): Promise<void> {
    if (this.proc) {
      this.proc.kill("SIGKILL");
      await this.proc.exited;
      this.proc = undefined;
    }
  }
}
