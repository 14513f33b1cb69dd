import type { Logger } from "../common/logging/logger";
import { splitListenAddr } from "../common/net/listen-addr";
import type { BlockxClient } from "../sdk/blockx-client";
import { readRegisteredWorkers } from "../sdk/worker-registry";
import { DashboardHistory } from "./core/dashboard-history";
import { coordinatorRow, taskRow, taskSample, workerRow, workerSample, type Overview } from "./core/dashboard-view";
// Embedded as text in the binary: one page, its style and script inline, nothing fetched from elsewhere.
import pageText from "./assets/dashboard.html" with { type: "text" };

const PAGE = pageText as unknown as string;
/** Task ids are UUIDs or client-chosen names; anything longer or stranger is refused before any RPC. */
const TASK_ID = /^[A-Za-z0-9._:\-]{1,200}$/;
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
}

export interface UiServer {
  /** http://host:port/ actually bound. */
  readonly url: string;
  stop(): void;
}

/**
 * startUiServer serves the read-only dashboard: the page itself, `/api/overview` (Workers from
 * their etcd heartbeats, tasks from every Worker's ListTasks, every Coordinator's reservation
 * outcomes from GetReservationOutcomes, each Worker's busy executors over the last minutes),
 * `/api/task?id=` (the task's snapshot, first error with traceback, and story, from GetTaskResult
 * and GetTaskStory, and its calls per second and call latency over its life), and two
 * server-sent event streams: `/api/events` (the overview every `refreshMs`) and `/api/logs?id=`
 * (the task's log tail, then each new line until the task ends). Nothing here changes a task.
 */
export function startUiServer(client: BlockxClient, o: UiServerOptions, log: Logger): UiServer {
  const { host, port } = splitListenAddr(o.listenAddr);
  let streams = 0;
  // What the charts draw: every overview feeds it, and a sampler keeps it going while no page is open.
  const history = new DashboardHistory();
  const overview = async (): Promise<Overview> => {
    const now = Date.now();
    const [registered, everywhere, coordinators] = await Promise.all([
      readRegisteredWorkers(client.config),
      client.tasksEverywhere(200),
      client.reservationOutcomes(RECENT_RESERVATIONS),
    ]);
    const workers = registered.map(workerRow);
    const tasks = everywhere.tasks.map((t) => taskRow(t, now));
    history.observeTasks(tasks.map(taskSample), now);
    history.observeWorkers(workers.flatMap((w) => workerSample(w) ?? []), now);
    return {
      atMs: now,
      workers,
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
  const json = (v: unknown, status = 200) => new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json", "cache-control": "no-store" } });
  const fail = (e: unknown, status = 502) => json({ error: (e as Error).message }, status);

  /** sse opens an event stream whose `pump` writes events until it returns or the page goes away. */
  const sse = (pump: (send: (event: string, data: unknown) => void, closed: () => boolean) => Promise<void>): Response => {
    if (streams >= o.maxStreams) return json({ error: `too many open dashboards (at most ${o.maxStreams})` }, 503);
    streams++;
    let closed = false;
    const body = new ReadableStream<string>({
      start(controller) {
        const send = (event: string, data: unknown) => {
          if (!closed) controller.enqueue(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        };
        void pump(send, () => closed)
          .catch((e) => send("failure", { error: (e as Error).message }))
          .finally(() => {
            if (!closed) controller.close();
            closed = true;
            streams--;
          });
      },
      cancel() {
        closed = true;
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
  };

  const taskId = (url: URL): string | Response => {
    const id = url.searchParams.get("id") ?? "";
    return TASK_ID.test(id) ? id : json({ error: `id: expected 1 to 200 of A-Z a-z 0-9 . _ : -, got ${JSON.stringify(id.slice(0, 40))}` }, 400);
  };

  const server = Bun.serve({
    hostname: host,
    port,
    idleTimeout: 0, // event streams stay open
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method !== "GET") return json({ error: "read-only" }, 405);
      switch (url.pathname) {
        case "/":
          return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
        case "/api/overview":
          return sharedOverview().then(json, (e) => fail(e));
        case "/api/events":
          return sse(async (send, closed) => {
            while (!closed()) {
              try {
                send("overview", await sharedOverview());
              } catch (e) {
                send("failure", { error: (e as Error).message });
              }
              await Bun.sleep(o.refreshMs);
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
          return sse(async (send) => {
            const ref = await client.locate(id);
            await client.streamLogs(ref, { tail: LOG_TAIL, follow: true }, (l) =>
              send("line", { seq: l.seq, timeMs: l.timeMs, input: l.input, stream: l.stream, level: l.level, text: l.text, droppedBefore: l.droppedBefore }),
            );
            send("end", {});
          });
        }
        default:
          return json({ error: "not found" }, 404);
      }
    },
  });
  const url = `http://${host}:${server.port}/`;
  log.info({ component: "ui", url }, "dashboard listening");
  return {
    url,
    stop: () => {
      clearInterval(sampler);
      server.stop(true);
    },
  };
}
