/** ProxyUpstreams: where the proxy sends each family of calls. */
export interface ProxyUpstreams {
  readonly blockCoordinators: readonly string[];
  readonly bundleCoordinators: readonly string[];
  readonly syncInvoker: string;
}

/** The services the proxy relays. */
export type RoutedService =
  | "coordinator.v1.CoordinatorService"
  | "bundlecoordinator.v1.BundleCoordinatorService"
  | "syncinvoker.v1.SyncInvokerService"
  | "worker.v1.WorkerService";

export type Route =
  | { readonly ok: true; readonly target: string; readonly service: RoutedService }
  | { readonly ok: false; readonly code: "INVALID_ARGUMENT" | "UNIMPLEMENTED"; readonly message: string };

export const WORKER_ADDR_HEADER = "x-blockx-worker-addr";
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-_]+):(\d{1,5})$/;

/**
 * ProxyRouter decides where one call goes, by its method path (runtime seed, proxy paragraph):
 * coordinator.v1 to the block Coordinators and bundlecoordinator.v1 to the bundle Coordinators
 * (round robin, so a client retrying after Unavailable meets the next one), syncinvoker.v1 to
 * the Sync Invoker, worker.v1 to the Worker named by the x-blockx-worker-addr header. Pure.
 */
export class ProxyRouter {
  private readonly turns = new Map<string, number>();

  constructor(private readonly upstreams: ProxyUpstreams) {}

  route(path: string, workerAddrHeader: string | undefined): Route {
    const service = /^\/([^/]+)\/[^/]+$/.exec(path)?.[1];
    switch (service) {
      case "coordinator.v1.CoordinatorService":
        return { ok: true, target: this.next(service, this.upstreams.blockCoordinators), service };
      case "bundlecoordinator.v1.BundleCoordinatorService":
        return { ok: true, target: this.next(service, this.upstreams.bundleCoordinators), service };
      case "syncinvoker.v1.SyncInvokerService":
        return { ok: true, target: this.upstreams.syncInvoker, service };
      case "worker.v1.WorkerService": {
        if (!workerAddrHeader) {
          return { ok: false, code: "INVALID_ARGUMENT", message: `${path} through the proxy needs the ${WORKER_ADDR_HEADER} metadata header naming the Worker (host:port)` };
        }
        if (!HOST_PORT.test(workerAddrHeader)) {
          return { ok: false, code: "INVALID_ARGUMENT", message: `${WORKER_ADDR_HEADER} must be host:port, got ${JSON.stringify(workerAddrHeader)}` };
        }
        return { ok: true, target: workerAddrHeader, service };
      }
      default:
        return { ok: false, code: "UNIMPLEMENTED", message: `the proxy does not route ${path}` };
    }
  }

  private next(service: string, targets: readonly string[]): string {
    const turn = this.turns.get(service) ?? 0;
    this.turns.set(service, turn + 1);
    return targets[turn % targets.length]!;
  }
}
