import { describe, expect, test } from "bun:test";
import { likelyStartCause } from "./start-failure";

const ctx = { python: "/usr/bin/python3", pythonPath: "/root/x/executor-py", user: "nobody", exitCode: 1 };

describe("likelyStartCause", () => {
  test("an unreadable PYTHONPATH: names the path and the user", () => {
    const cause = likelyStartCause(["/usr/bin/python3: Error while finding module specification for 'blockx_executor' (ModuleNotFoundError: No module named 'blockx_executor')"], ctx);
    expect(cause).toContain("PYTHONPATH /root/x/executor-py");
    expect(cause).toContain("nobody");
  });

  test("another missing module: a damaged copy or the wrong interpreter", () => {
    expect(likelyStartCause(["Traceback (most recent call last):", "ModuleNotFoundError: No module named 'blockx_gone'"], ctx)).toContain("the module blockx_gone is missing");
  });

  test("isolation refused, permission denied, an old Python, nothing recognised", () => {
    expect(likelyStartCause(["unshare: unshare failed: Operation not permitted"], ctx)).toContain("EXECUTOR_NETWORK_ISOLATION=off");
    expect(likelyStartCause(["PermissionError: [Errno 13] Permission denied: '/x'"], ctx)).toContain("permission was denied to nobody");
    expect(likelyStartCause(["SyntaxError: invalid syntax"], ctx)).toContain("3.10");
    expect(likelyStartCause([], { ...ctx, exitCode: 127 })).toContain("could not be executed");
    expect(likelyStartCause(["boom"], ctx)).toBe("see the executor's stderr above");
  });
});
