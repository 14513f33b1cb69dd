import { randomBytes } from "node:crypto";
import { hostname, networkInterfaces } from "node:os";
import type { Logger } from "../common/logging/logger";
import { splitListenAddr } from "../common/net/listen-addr";
import type { BlockxClient } from "../sdk/blockx-client";
import { readRegisteredWorkers } from "../sdk/worker-registry";
import { DashboardHistory } from "./core/dashboard-history";
import { allowedHosts, decideAccess, isWildcardHost } from "./core/ui-access";
import { pageSecurityHeaders } from "./page-security-headers";
import { coordinatorRow, taskRow, taskSample, workerRow, workerSample, type Overview } from "./core/dashboard-view";
// Embedded as text in the binary: one page, its style and script inline, nothing fetched from elsewhere.
import pageText from "./assets/dashboard.html" with { type: "text" };

const PAGE = pageText as unknown as string;
/** Task ids are UUIDs or client-chosen names; anything longer or stranger is refused before any RPC. */
const TASK_ID = /^[A-Za-z0-9._:\-]{1,200}$/;
/** At most one "dashboard request refused" line this often (ms). */
const REFUSAL_LOG_MS = 10_000;
/** Log lines the task page asks for first (then follows). */
const LOG_TAIL = 200;
/** Recent reservations shown per Coordinator. */
const RECENT_RESERVATIONS = 10;
/** How often the charts' history is sampled while no page is open (an etcd read and a ListTasks per Worker). */
export const DEFAULT_SAMPLE_MS = 5_000;

export interface UiServerOptions {
  /** host:port; port 0 picks a free one. */
  readonly listenAddr: string;
  /** How often each open page gets a fresh overview. */
  readonly refreshMs: number;
  /** Open event streams at most (each polls etcd and every Worker). */
  readonly maxStreams: number;
  /** How often the charts' history is sampled when no page asks (DEFAULT_SAMPLE_MS). */
  readonly sampleMs?: number;
  /** The access token (UI_TOKEN); empty or absent: a random one for this start. */
  readonly token?: string;
  /** Host names besides loopback and the bind host that requests may name (UI_HOSTS: a tunnel's or a reverse proxy's). */
  readonly hosts?: readonly string[];
}

export interface UiServer {
  /** http://host:port/?token=... actually bound: the one URL that opens the dashboard. */
  readonly url: string;
  /** http://host:port/ without the token (for logs). */
  readonly address: string;
  /** The token requests must carry (in the URL once, then the cookie; or Authorization: Bearer). */
  readonly token: string;
  /** Event streams open now (overview pages and log tails). */
  openStreams(): number;
  stop(): void;
}

/** machineNames: this host's name and addresses, which a request to a wildcard bind may name. */
function machineNames(): string[] {
  const addrs = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
  return [hostname(), ...addrs];
}

/**
 * startUiServer serves the read-only dashboard: the page itself, `/api/overview` (Workers from
 * their etcd heartbeats, followers from the statuses they publish in etcd, tasks from every Worker's ListTasks, every Coordinator's reservation
 * outcomes from GetReservationOutcomes, each Worker's busy executors over the last minutes),
 * `/api/task?id=` (the task's snapshot, first error with traceback, and story, from GetTaskResult
 * and GetTaskStory, and its calls per second and call latency over its life), and two
 * server-sent event streams: `/api/events` (the overview every `refreshMs`) and `/api/logs?id=`
 * (the task's log tail, then each new line until the task ends). Nothing here changes a task.
 *
 * Every request passes `decideAccess` first (the Host header, then the token: see
 * core/ui-access.ts); every response carries `pageSecurityHeaders`. A stream whose page goes (its
 * HTTP connection closes) is cancelled at once, its Worker stream with it.
 */
export function startUiServer(client: BlockxClient, o: UiServerOptions, log: Logger): UiServer {
  const { host, port } = splitListenAddr(o.listenAddr);
  const token = o.token || randomBytes(24).toString("base64url");
  const securityHeaders = pageSecurityHeaders(PAGE);
  let streams = 0;
  // What the charts draw: every overview feeds it, and a sampler keeps it going while no page is open.
  const history = new DashboardHistory();
  const overview = async (): Promise<Overview> => {
    const now = Date.now();
    const [registered, everywhere, coordinators, followers] = await Promise.all([
      readRegisteredWorkers(client.config),
      client.tasksEverywhere(200),
      client.reservationOutcomes(RECENT_RESERVATIONS),
      client.followers(),
    ]);
    const workers = registered.map(workerRow);
    const tasks = everywhere.tasks.map((t) => taskRow(t, now));
    history.observeTasks(tasks.map(taskSample), now);
    history.observeWorkers(workers.flatMap((w) => workerSample(w) ?? []), now);
    return {
      atMs: now,
      workers,
      followers: followers.followers,
      followersSkipped: followers.skippedKeys,
      tasks,
      coordinators: coordinators.map(coordinatorRow),
      unreachable: everywhere.unreachable,
      busyExecutors: Object.fromEntries(workers.map((w) => [w.addr, history.workerBusy(w.addr)])),
    };
  };
  // One overview per refresh period, shared by every open page: each costs an etcd read and an
  // RPC to every Worker and Coordinator, which must not grow with the number of pages.
  let latest: { atMs: number; overview: Promise<Overview> } | null = null;
  const sharedOverview = (): Promise<Overview> => {
    const now = Date.now();
    if (latest === null || now - latest.atMs >= o.refreshMs) latest = { atMs: now, overview: overview() };
    return latest.overview;
  };
  const sampler = setInterval(() => void sharedOverview().catch((e) => log.debug({ component: "ui", err: (e as Error).message }, "history sample failed")), o.sampleMs ?? DEFAULT_SAMPLE_MS);
  const json = (v: unknown, status = 200) => new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json", "cache-control": "no-store", ...securityHeaders } });
  const fail = (e: unknown, status = 502) => json({ error: (e as Error).message }, status);

  /**
   * sse opens an event stream whose `pump` writes events until it returns or the page goes away:
   * then (the request's signal, or the body's cancel) `signal` aborts, and the pump must stop
   * (a log tail cancels its Worker stream). The stream stops counting against UI_MAX_STREAMS when
   * its page goes, not when its pump notices.
   */
  const sse = (req: Request, pump: (send: (event: string, data: unknown) => void, signal: AbortSignal) => Promise<void>): Response => {
    if (streams >= o.maxStreams) return json({ error: `too many open dashboards (at most ${o.maxStreams}, UI_MAX_STREAMS)` }, 503);
    streams++;
    const gone = new AbortController();
    let counted = true;
    const release = () => {
      if (counted) streams--;
      counted = false;
      gone.abort();
    };
    req.signal.addEventListener("abort", release, { once: true });
    const body = new ReadableStream<string>({
      start(controller) {
        const send = (event: string, data: unknown) => {
          if (!gone.signal.aborted) controller.enqueue(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        };
        void pump(send, gone.signal)
          .catch((e) => send("failure", { error: (e as Error).message }))
          .finally(() => {
            if (!gone.signal.aborted) controller.close();
            release();
          });
      },
      cancel: release,
    });
    return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-store", ...securityHeaders } });
  };

  const taskId = (url: URL): string | Response => {
    const id = url.searchParams.get("id") ?? "";
    return TASK_ID.test(id) ? id : json({ error: `id: expected 1 to 200 of A-Z a-z 0-9 . _ : -, got ${JSON.stringify(id.slice(0, 40))}` }, 400);
  };

  let hosts: ReadonlySet<string> = new Set();
  let lastRefusalLogMs = Number.NEGATIVE_INFINITY;
  let refusedSinceLog = 0;
  const cookieName = () => `blockx_ui_${server.port}`;
  const cookieOf = (req: Request): string | null => {
    for (const part of (req.headers.get("cookie") ?? "").split(";")) {
      const [k, ...v] = part.trim().split("=");
      if (k === cookieName()) return v.join("=");
    }
    return null;
  };

  const server = Bun.serve({
    hostname: host,
    port,
    idleTimeout: 0, // event streams stay open
    async fetch(req) {
      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        // An empty or malformed Host makes no URL: the caller's mistake (found by test/fuzz), not the dashboard's.
        return json({ error: "bad request: the request's Host and path make no URL" }, 400);
      }
      const access = decideAccess(
        { host: req.headers.get("host"), queryToken: url.searchParams.get("token"), cookieToken: cookieOf(req), authorization: req.headers.get("authorization") },
        { token, hosts, port: server.port ?? 0 },
      );
      if (access.kind === "refuse") {
        // One line per REFUSAL_LOG_MS at most, with how many were refused since: a page hammering the port cannot flood the log.
        const now = performance.now();
        refusedSinceLog++;
        if (now - lastRefusalLogMs >= REFUSAL_LOG_MS) {
          log.warn({ component: "ui", status: access.status, path: url.pathname.slice(0, 100), reason: access.reason, refused: refusedSinceLog }, "dashboard request refused");
          lastRefusalLogMs = now;
          refusedSinceLog = 0;
        }
        return json({ error: access.reason }, access.status);
      }
      const res = await route(req, url);
      // The token came in the URL: from now on the cookie carries it (this port's dashboard only; never sent by another site).
      if (access.setCookie) res.headers.append("set-cookie", `${cookieName()}=${token}; HttpOnly; SameSite=Strict; Path=/`);
      return res;
    },
  });
  hosts = allowedHosts(host, o.hosts ?? [], isWildcardHost(host) ? machineNames() : []);

  async function route(req: Request, url: URL): Promise<Response> {
    if (req.method !== "GET") return json({ error: "read-only" }, 405);
    switch (url.pathname) {
      case "/":
        return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...securityHeaders } });
      case "/api/overview":
        return sharedOverview().then(json, (e) => fail(e));
      case "/api/events":
        return sse(req, async (send, signal) => {
          while (!signal.aborted) {
            try {
              send("overview", await sharedOverview());
            } catch (e) {
              send("failure", { error: (e as Error).message });
            }
            await new Promise<void>((resolve) => {
              const t = setTimeout(resolve, o.refreshMs);
              signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
            });
          }
        });
      case "/api/task": {
        const id = taskId(url);
        if (typeof id !== "string") return id;
        try {
          const ref = await client.locate(id);
          const [result, story] = await Promise.all([client.result(ref), client.story(ref).catch(() => ({ entries: [] }))]);
          const entry = (await client.listTasks(ref.workerAddr, 10_000)).tasks.find((t) => t.snapshot?.taskId === id);
          const now = Date.now();
          const task = taskRow(
            {
              snapshot: result.snapshot,
              owner: entry?.owner ?? "",
              function: entry?.function ?? "",
              logLinesDropped: entry?.logLinesDropped ?? 0,
              callsTimed: entry?.callsTimed ?? 0,
              callSeconds: entry?.callSeconds ?? 0,
              workerAddr: ref.workerAddr,
            },
            now,
          );
          history.observeTasks([taskSample(task)], now);
          return json({
            task,
            firstError: result.firstError ?? null,
            writes: result.writes,
            story: story.entries,
            charts: history.taskCharts(ref.workerAddr, id),
          });
        } catch (e) {
          return fail(e, /NOT_FOUND/.test((e as Error).message) ? 404 : 502);
        }
      }
      case "/api/logs": {
        const id = taskId(url);
        if (typeof id !== "string") return id;
        return sse(req, async (send, signal) => {
          const ref = await client.locate(id);
          if (signal.aborted) return;
          await client.streamLogs(ref, { tail: LOG_TAIL, follow: true, signal }, (l) =>
            send("line", { seq: l.seq, timeMs: l.timeMs, input: l.input, stream: l.stream, level: l.level, text: l.text, droppedBefore: l.droppedBefore }),
          );
          send("end", {});
        });
      }
      default:
        return json({ error: "not found" }, 404);
    }
  }
  // A wildcard bind is opened through loopback; a v6 address needs its brackets in a URL.
  const shownHost = isWildcardHost(host) ? "127.0.0.1" : host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const address = `http://${shownHost}:${server.port}/`;
  log.info({ component: "ui", url: address }, "dashboard listening");
  return {
    url: `${address}?token=${token}`,
    address,
    token,
    openStreams: () => streams,
    stop: () => {
      clearInterval(sampler);
      server.stop(true);
    },
  };
}
