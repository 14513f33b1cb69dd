import { clientCommand } from "./client/client-command";
import { cancelMeta, invokeMeta, logsMeta, precheckMeta, resultMeta, submitMeta, tableMeta, tasksMeta, watchMeta, workersMeta } from "./client/command-meta";
import type { Command } from "./command";

/** The client commands (on the SDK, each loaded when run). */
export const clientCommands: Command[] = [
  clientCommand(submitMeta, async () => (await import("./client/submit-command")).submitRun),
  clientCommand(watchMeta, async () => (await import("./client/task-commands")).watchRun),
  clientCommand(resultMeta, async () => (await import("./client/task-commands")).resultRun),
  clientCommand(cancelMeta, async () => (await import("./client/task-commands")).cancelRun),
  clientCommand(logsMeta, async () => (await import("./client/task-commands")).logsRun),
  clientCommand(tasksMeta, async () => (await import("./client/tasks-command")).tasksRun),
  clientCommand(invokeMeta, async () => (await import("./client/invoke-commands")).invokeRun),
  clientCommand(precheckMeta, async () => (await import("./client/invoke-commands")).precheckRun),
  clientCommand(workersMeta, async () => (await import("./client/workers-command")).workersRun),
  clientCommand(tableMeta, async () => (await import("./client/table-command")).tableRun),
];
