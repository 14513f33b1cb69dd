/**
 * DevPlan: which children `blockx dev` runs and in which stage each starts. A stage starts
 * only when every child of the stage before it is ready, because it needs their endpoints:
 * etcd first, then the Coordinators and Workers (they need etcd), then the Sync Invoker, then
 * the proxy (it routes to the Coordinators and the Sync Invoker, so it must know their
 * addresses when it starts). Stopping runs the stages backwards.
 */
export type ChildRole = "etcd" | "coordinator" | "bundle-coordinator" | "worker" | "bundle-worker" | "syncinvoker" | "proxy";

export interface ChildSpec {
  /** Unique name, also the log file's name and the terminal prefix: `worker-2`. */
  readonly id: string;
  readonly role: ChildRole;
  readonly stage: number;
}

export interface DevPlanOptions {
  readonly workers: number;
  readonly bundleWorkers: number;
  readonly syncInvoker: boolean;
  readonly proxy: boolean;
}

/** planChildren lists the children in start order; ids of repeated roles are numbered from 1. */
export function planChildren(o: DevPlanOptions): ChildSpec[] {
  const out: ChildSpec[] = [{ id: "etcd", role: "etcd", stage: 0 }];
  out.push({ id: "coordinator", role: "coordinator", stage: 1 }, { id: "bundle-coordinator", role: "bundle-coordinator", stage: 1 });
  for (let i = 1; i <= o.workers; i++) out.push({ id: `worker-${i}`, role: "worker", stage: 1 });
  for (let i = 1; i <= o.bundleWorkers; i++) out.push({ id: `bundle-worker-${i}`, role: "bundle-worker", stage: 1 });
  if (o.syncInvoker) out.push({ id: "syncinvoker", role: "syncinvoker", stage: 2 });
  if (o.proxy) out.push({ id: "proxy", role: "proxy", stage: o.syncInvoker ? 3 : 2 });
  return out;
}
