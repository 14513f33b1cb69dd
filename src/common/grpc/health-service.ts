import * as grpc from "@grpc/grpc-js";
import {
  HealthCheckResponse,
  HealthCheckResponse_ServingStatus as ServingStatus,
  HealthService,
  type HealthCheckRequest,
  type HealthServer,
} from "../../gen/grpc/health/v1/health";

export { ServingStatus };

/**
 * HealthStatus implements grpc.health.v1.Health for one server. The empty service name
 * stands for the whole server; each registered service has its own status. Watch streams
 * the current status, then every change.
 */
export class HealthStatus {
  private readonly statuses = new Map<string, ServingStatus>();
  /** Services whose status is derived on demand (e.g. from a core's readiness). */
  private readonly probes = new Map<string, () => ServingStatus>();
  private readonly watchers = new Set<{ service: string; call: grpc.ServerWritableStream<HealthCheckRequest, HealthCheckResponse> }>();

  constructor(services: readonly string[], initial: ServingStatus = ServingStatus.NOT_SERVING) {
    for (const s of ["", ...services]) this.statuses.set(s, initial);
  }

  /** setAll moves the server and every service to `status` (SERVING when ready, NOT_SERVING when draining). */
  setAll(status: ServingStatus): void {
    for (const s of this.statuses.keys()) this.set(s, status);
  }

  set(service: string, status: ServingStatus): void {
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    for (const w of this.watchers) if (w.service === service) w.call.write(HealthCheckResponse.create({ status }));
  }

  /**
   * derive makes `service`'s status a function of other state: Check evaluates it on every
   * call, so an answer is never staler than the state itself; Watch streams see it change at
   * the next refresh().
   */
  derive(service: string, probe: () => ServingStatus): void {
    this.probes.set(service, probe);
    this.set(service, probe());
  }

  /** refresh re-evaluates derived statuses and notifies Watch streams of changes. */
  refresh(): void {
    for (const [service, probe] of this.probes) this.set(service, probe());
  }

  get(service: string): ServingStatus | undefined {
    const probe = this.probes.get(service);
    return probe ? probe() : this.statuses.get(service);
  }

  /** endWatches closes every Watch stream, so that a server shutdown does not wait on them. */
  endWatches(): void {
    for (const w of this.watchers) w.call.end();
    this.watchers.clear();
  }

  register(server: grpc.Server): void {
    const impl: HealthServer = {
      check: (call, callback) => {
        const status = this.get(call.request.service);
        if (status === undefined) {
          callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(call.request.service)}` });
          return;
        }
        callback(null, HealthCheckResponse.create({ status }));
      },
      watch: (call) => {
        const service = call.request.service;
        const entry = { service, call };
        this.watchers.add(entry);
        call.write(HealthCheckResponse.create({ status: this.statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN }));
        const drop = () => this.watchers.delete(entry);
        call.on("cancelled", drop);
        call.on("close", drop);
      },
    };
    server.addService(HealthService, impl);
  }
}
