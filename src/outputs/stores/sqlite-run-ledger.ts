import type { Database } from "bun:sqlite";
import { decideClaim, type RunClaim, type RunClaimRequest, type RunFence, type RunRow, type RunState } from "./run-fence";

/**
 * SqliteRunLedger keeps fencing's records (run-fence.ts) in a SQLite database: the runs of task
 * ids, the Worker epochs' leases and the claim sequence. The SQLite table store keeps them beside
 * its tables; the Parquet dataset store in its catalog (`_blockx/catalog.sqlite`). Every method is
 * one immediate transaction of its own, except `runRow` and `nextSeq`, which run inside the
 * caller's (a commit checks its fence in its own transaction).
 */
export class SqliteRunLedger {
  constructor(
    private readonly db: Database,
    /** The clock leases are kept by (this host's: every process sharing the file shares it). */
    private readonly nowMs: () => number = Date.now,
  ) {
    db.exec(
      `CREATE TABLE IF NOT EXISTS _blockx_runs (task_id TEXT PRIMARY KEY, generation INTEGER NOT NULL, epoch TEXT NOT NULL, worker TEXT NOT NULL, state TEXT NOT NULL, seq INTEGER NOT NULL, updated_ms INTEGER NOT NULL)`,
    );
    db.exec(`CREATE TABLE IF NOT EXISTS _blockx_leases (epoch TEXT PRIMARY KEY, worker TEXT NOT NULL, expires_ms INTEGER NOT NULL)`);
    db.exec(`CREATE TABLE IF NOT EXISTS _blockx_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)`);
  }

  /** openEpoch starts a Worker incarnation's lease. */
  openEpoch(epoch: string, workerAddr: string, ttlMs: number): void {
    this.db.query(`INSERT INTO _blockx_leases (epoch, worker, expires_ms) VALUES (?, ?, ?) ON CONFLICT (epoch) DO UPDATE SET expires_ms = excluded.expires_ms WHERE expires_ms > ?`).run(epoch, workerAddr, this.nowMs() + ttlMs, this.nowMs());
  }

  /**
   * renewEpoch extends a lease that was live when the renewal was sent (`issuedMs`: a renewal that
   * waited on another process's lock is not late for it; a Worker that was paused sends it late),
   * by `ttlMs` from when it is written; false (and no change) when it had expired or never existed.
   */
  renewEpoch(epoch: string, ttlMs: number, issuedMs?: number): boolean {
    let renewed = false;
    this.db
      .transaction(() => {
        const now = this.nowMs();
        renewed = this.db.query(`UPDATE _blockx_leases SET expires_ms = ? WHERE epoch = ? AND expires_ms > ?`).run(now + ttlMs, epoch, issuedMs ?? now).changes === 1;
      })
      .immediate();
    return renewed;
  }

  /** claimRun decides and records a claim in one immediate transaction (run-fence.ts). */
  claimRun(req: RunClaimRequest): RunClaim {
    let out: RunClaim = { kind: "leaseLost" };
    this.db
      .transaction(() => {
        const now = this.nowMs();
        const own = this.db.query(`SELECT expires_ms FROM _blockx_leases WHERE epoch = ?`).get(req.epoch) as { expires_ms: number } | null;
        const row = this.runRow(req.taskId);
        const d = decideClaim(req, row, own !== null && own.expires_ms > now);
        if (d.kind === "leaseLost") return;
        if (d.kind === "refuse") {
          out = { kind: "refused", current: row! };
          return;
        }
        if (d.kind === "mine") {
          out = { kind: "claimed", fence: d.fence, tookOver: null };
          return;
        }
        const seq = this.nextSeq("run_seq");
        const generation = d.kind === "insert" ? 1 : d.generation;
        this.db
          .query(
            `INSERT INTO _blockx_runs (task_id, generation, epoch, worker, state, seq, updated_ms) VALUES (?, ?, ?, ?, 'RUNNING', ?, ?) ` +
              `ON CONFLICT (task_id) DO UPDATE SET generation = excluded.generation, epoch = excluded.epoch, worker = excluded.worker, state = 'RUNNING', seq = excluded.seq, updated_ms = excluded.updated_ms`,
          )
          .run(req.taskId, generation, req.epoch, req.workerAddr, seq, now);
        out = { kind: "claimed", fence: { taskId: req.taskId, generation, epoch: req.epoch, seq }, tookOver: row };
      })
      .immediate();
    return out;
  }

  /** endRun records a run's end, if it is still the task's run. */
  endRun(fence: RunFence, state: Exclude<RunState, "RUNNING">): void {
    this.db.query(`UPDATE _blockx_runs SET state = ?, updated_ms = ? WHERE task_id = ? AND generation = ? AND epoch = ? AND state = 'RUNNING'`).run(state, this.nowMs(), fence.taskId, fence.generation, fence.epoch);
  }

  /** nextSeq: the next value of counter `name` (1, 2, ...), inside the caller's transaction. */
  nextSeq(name: string): number {
    const r = this.db.query(`INSERT INTO _blockx_counters (name, value) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value`).get(name) as { value: number };
    return r.value;
  }

  /** runRow: the task's run with whether its epoch's lease is live at `atMs` (default now; null: never claimed). */
  runRow(taskId: string, atMs?: number): RunRow | null {
    const r = this.db
      .query(`SELECT r.generation, r.epoch, r.worker, r.state, r.seq, l.expires_ms FROM _blockx_runs r LEFT JOIN _blockx_leases l ON l.epoch = r.epoch WHERE r.task_id = ?`)
      .get(taskId) as { generation: number; epoch: string; worker: string; state: RunState; seq: number; expires_ms: number | null } | null;
    if (!r) return null;
    return { taskId, generation: r.generation, epoch: r.epoch, workerAddr: r.worker, state: r.state, seq: r.seq, leaseLive: r.expires_ms !== null && r.expires_ms > (atMs ?? this.nowMs()) };
  }
}

/**
 * LedgerEngine: a table engine whose fencing records are a SqliteRunLedger (SqliteTables,
 * ParquetTables): the TableEngine's fencing methods, served by it.
 */
export abstract class LedgerEngine {
  protected abstract readonly runs: SqliteRunLedger;

  openEpoch(epoch: string, workerAddr: string, ttlMs: number): void {
    this.runs.openEpoch(epoch, workerAddr, ttlMs);
  }

  renewEpoch(epoch: string, ttlMs: number, issuedMs?: number): boolean {
    return this.runs.renewEpoch(epoch, ttlMs, issuedMs);
  }

  claimRun(req: RunClaimRequest): RunClaim {
    return this.runs.claimRun(req);
  }

  endRun(fence: RunFence, state: Exclude<RunState, "RUNNING">): void {
    this.runs.endRun(fence, state);
  }
}
