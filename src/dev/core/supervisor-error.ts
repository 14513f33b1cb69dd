/** SupervisorError: the adapter fed an event the core cannot apply, or the core broke its own rules (a bug, not a child's fault). */
export class SupervisorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SupervisorError";
  }
}
