/**
 * LoneCallPoll keeps the pool's event loop polling, for at most `windowUs` after a frame went to an
 * executor, while that frame's call is the only one in the pool and its answer has not come.
 *
 * Why: when the loop has nothing to do it sleeps in epoll, and on this kind of machine (a VM whose
 * idle vCPUs halt) the executor's answer then costs a cross-CPU wake-up of 30-70 µs, as much as a
 * whole Bun <-> Python round trip when neither side sleeps (bench/README.md, 2026-12-04: a serial call
 * 72-105 µs; with this poll 49-62; with it and the executors' hot spin 30-33). A loop with an
 * immediate pending polls its sockets without blocking, so the answer is read as soon as it lands.
 *
 * Bounded three ways: only a lone call (one caller waiting on one executor: the Sync Invoker's and a
 * serial task's case; with more calls in flight the loop is busy anyway and a poll would take CPU
 * from the executors), at most `windowUs` per frame sent, and only while the lone calls' answers
 * came within the window: one that did not turns the poll off until an answer comes in time again.
 */
export class LoneCallPoll {
  private sentAtUs = 0;
  private answered = true;
  private polling = false;
  private stopped = false;
  /** Whether the last lone call's answer came within the window (the poll is worth its CPU). */
  private answersInTime = true;
  /** Frames whose answer was polled for so far (the pool's stats). */
  polled = 0;

  constructor(
    private readonly windowUs: number,
    private readonly schedule: (f: () => void) => void = (f) => setImmediate(f),
    private readonly nowUs: () => number = () => performance.now() * 1000,
  ) {}

  /** sent: a frame that asks for an answer (ExecuteCall, ResumeCall) went to an executor; `lone` when its call is the pool's only one. */
  sent(lone: boolean): void {
    if (this.windowUs <= 0 || this.stopped) return;
    this.sentAtUs = this.nowUs();
    this.answered = !lone;
    if (!lone || !this.answersInTime) return;
    this.polled++;
    if (this.polling) return; // a poll still running (the previous answer came this turn) goes on for this one
    this.polling = true;
    this.schedule(this.poll);
  }

  /** heard: a frame came from an executor (an answer, a suspension); it ends the poll. */
  heard(): void {
    if (this.answered) return;
    this.answered = true;
    this.answersInTime = this.nowUs() - this.sentAtUs <= this.windowUs;
  }

  /** stop ends polling for good (the pool is closing). */
  stop(): void {
    this.stopped = true;
    this.answered = true;
  }

  private readonly poll = (): void => {
    if (this.answered) {
      this.polling = false;
      return;
    }
    if (this.nowUs() - this.sentAtUs > this.windowUs) {
      this.polling = false;
      this.answersInTime = false; // until an answer comes in time again (heard() still measures it)
      return;
    }
    this.schedule(this.poll);
  };
}
