import type { MetricsRegistry } from "../../common/metrics/metrics";
import type { IoObserver, IoSubsystem, IoVia } from "./io-subsystem";

/**
 * registerIoMetrics exposes the IO subsystem: requests by how they were answered, backend
 * requests and their latency, the read cache (hits, misses, evictions, bytes, entries) and
 * each backend's admission state (limit, in flight, peak in flight, queued, rejected). It
 * returns the observer to hand to the subsystem.
 */
export function registerIoMetrics(registry: MetricsRegistry, io: () => IoSubsystem): IoObserver {
  const requests = registry.counter("blockx_io_requests_total", "IO requests of user functions, by how they were answered (cache, shared, backend, overloaded, refused, cancelled).", ["backend", "op", "via"]);
  const backendRequests = registry.counter("blockx_io_backend_requests_total", "Requests that reached a backend, by result.", ["backend", "op", "result"]);
  const backendSeconds = registry.histogram("blockx_io_backend_request_seconds", "Time a backend took per request.", ["backend"]);
  const cacheBytes = registry.gauge("blockx_io_cache_bytes", "Bytes held by the read cache (key + JSON text + per-entry overhead).");
  const cacheEntries = registry.gauge("blockx_io_cache_entries", "Entries in the read cache.");
  const hits = registry.counter("blockx_io_cache_hits_total", "Read cache hits.");
  const misses = registry.counter("blockx_io_cache_misses_total", "Read cache misses (requests of cacheable ops not found in the cache).");
  const evictions = registry.counter("blockx_io_cache_evictions_total", "Read cache entries evicted to stay under IO_CACHE_MAX_BYTES.");
  const limit = registry.gauge("blockx_io_admission_limit", "A backend's adaptive concurrency limit.", ["backend"]);
  const inflight = registry.gauge("blockx_io_inflight", "Requests in flight to a backend.", ["backend"]);
  const peak = registry.gauge("blockx_io_inflight_peak", "The most requests ever in flight to a backend at once.", ["backend"]);
  const queued = registry.gauge("blockx_io_admission_queued", "Requests waiting for a backend's admission.", ["backend"]);
  const rejected = registry.counter("blockx_io_admission_rejected_total", "Requests rejected by a backend's admission (BackendOverloaded).", ["backend"]);
  cacheBytes.onCollect(() => {
    const c = io().cache;
    cacheBytes.set({}, c.bytes);
    cacheEntries.set({}, c.size);
    // The cache counts for itself (no call per request); bring the counters up to its totals.
    hits.setTotal({}, c.hits);
    misses.setTotal({}, c.misses);
    evictions.setTotal({}, c.evictions);
  });
  // Rendering follows registration: these gauges' collectors run before the counters they update render.
  limit.onCollect(() => {
    const s = io();
    for (const name of s.limiterNames()) {
      const l = s.limiter(name);
      limit.set({ backend: name }, l.limit);
      inflight.set({ backend: name }, l.inflight);
      peak.set({ backend: name }, l.peakInflight);
      queued.set({ backend: name }, l.queued);
      rejected.setTotal({ backend: name }, l.rejected);
    }
  });
  return {
    answered(backend: string, op: string, via: IoVia) {
      requests.inc({ backend, op, via });
    },
    backendCalled(backend: string, op: string, ok: boolean, ms: number) {
      backendRequests.inc({ backend, op, result: ok ? "ok" : "error" });
      backendSeconds.observe({ backend }, ms / 1000);
    },
  };
}
