/** Flight is one backend request in progress and the waiters that share its answer. */
export interface Flight<W> {
  readonly key: string;
  /** Waiters by task (a task's waiters leave together when it ends). */
  readonly waiters: Map<string, W[]>;
}

/**
 * SingleflightTable joins identical concurrent requests into one flight: the first to join
 * leads (starts the backend request), the others wait, and `settle` hands back every waiter so
 * that all see the same answer, an error included. It holds no promises and no clock; the
 * adapter owns both. Keys are scoped by the caller: task-local for mutable data, global for
 * final (cacheable) data so that tasks share them too.
 *
 * No leak after cancel: `dropTask` removes a task's waiters from every flight and forgets
 * flights left without waiters; a dropped flight's late answer is then ignored (`settle` of a
 * flight no longer in the table returns no waiters), and a new identical request starts a new
 * flight.
 */
export class SingleflightTable<W> {
  private readonly flights = new Map<string, Flight<W>>();
  /** The keys each task waits on, so that dropping a task does not scan every flight. */
  private readonly keysByTask = new Map<string, Set<string>>();

  /** join adds a waiter; `lead` is true when it opened the flight and must start the request. */
  join(key: string, taskId: string, waiter: W): { flight: Flight<W>; lead: boolean } {
    let flight = this.flights.get(key);
    const lead = flight === undefined;
    if (!flight) this.flights.set(key, (flight = { key, waiters: new Map() }));
    const mine = flight.waiters.get(taskId);
    if (mine) mine.push(waiter);
    else flight.waiters.set(taskId, [waiter]);
    let keys = this.keysByTask.get(taskId);
    if (!keys) this.keysByTask.set(taskId, (keys = new Set()));
    keys.add(key);
    return { flight, lead };
  }

  /** isLive says whether anyone still waits on the flight (false once settled or dropped). */
  isLive(flight: Flight<W>): boolean {
    return this.flights.get(flight.key) === flight;
  }

  /** settle closes the flight and returns its waiters, in order of joining per task. */
  settle(flight: Flight<W>): W[] {
    if (!this.isLive(flight)) return [];
    this.flights.delete(flight.key);
    const out: W[] = [];
    for (const [taskId, ws] of flight.waiters) {
      out.push(...ws);
      const keys = this.keysByTask.get(taskId);
      if (keys) {
        keys.delete(flight.key);
        if (keys.size === 0) this.keysByTask.delete(taskId);
      }
    }
    return out;
  }

  /** dropTask removes a task's waiters everywhere and returns them (to be answered as cancelled). */
  dropTask(taskId: string): W[] {
    const keys = this.keysByTask.get(taskId);
    if (!keys) return [];
    this.keysByTask.delete(taskId);
    const out: W[] = [];
    for (const key of keys) {
      const flight = this.flights.get(key)!;
      out.push(...flight.waiters.get(taskId)!);
      flight.waiters.delete(taskId);
      if (flight.waiters.size === 0) this.flights.delete(key);
    }
    return out;
  }

  /** Flights open. */
  get size(): number {
    return this.flights.size;
  }

  /** Tasks with a waiter somewhere. */
  get tasks(): number {
    return this.keysByTask.size;
  }
}
