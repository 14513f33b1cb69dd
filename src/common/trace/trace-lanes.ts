/**
 * TraceLanes gives each span a lane (a `tid` of the trace-event format) so that trace viewers,
 * which nest complete events by time within one lane, draw a span inside its parent: a span goes
 * into its parent's lane while the parent is that lane's innermost open span, otherwise (a root,
 * or a sibling overlapping another child) into the lowest free lane. Lanes are reused once empty,
 * so their number is the trace's largest concurrency. Lane 0 is kept for the process itself
 * (event-loop stalls, heap). Pure: no clock, no IO.
 */
export class TraceLanes {
  /** Per lane (index = lane - 1): the ids of its open spans, outermost first. */
  private readonly stacks: number[][] = [];

  /** open puts span `id` into a lane and returns the lane; `parent` is its parent's [id, lane]. */
  open(id: number, parent: { id: number; lane: number } | null): number {
    if (parent !== null) {
      const stack = this.stacks[parent.lane - 1];
      if (stack !== undefined && stack.at(-1) === parent.id) {
        stack.push(id);
        return parent.lane;
      }
    }
    let i = this.stacks.findIndex((s) => s.length === 0);
    if (i < 0) i = this.stacks.push([]) - 1;
    this.stacks[i]!.push(id);
    return i + 1;
  }

  /** close takes span `id` out of `lane` (normally its innermost span). */
  close(id: number, lane: number): void {
    const stack = this.stacks[lane - 1];
    if (stack === undefined) return;
    const at = stack.lastIndexOf(id);
    if (at >= 0) stack.splice(at, 1);
  }

  /** count: lanes made so far. */
  get count(): number {
    return this.stacks.length;
  }
}
