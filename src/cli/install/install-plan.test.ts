import { describe, expect, test } from "bun:test";
import { deployFiles } from "./deploy-files";
import { installLayout, planInstall } from "./install-plan";

describe("planInstall", () => {
  const files = deployFiles.worker;

  test("a fresh host gets the binary, the env file, chains.json and the unit, pointed at the prefix", () => {
    // An operator stages an install under /opt/stage: the unit must run what was installed there.
    const steps = planInstall("worker", files, "/opt/stage", "/tmp/blockx", () => null);
    expect(steps.map((s) => [s.kind, "path" in s ? s.path : s.to])).toEqual([
      ["copyBinary", "/opt/stage/usr/local/bin/blockx"],
      ["write", "/opt/stage/etc/blockx/worker.env"],
      ["write", "/opt/stage/etc/blockx/chains.json"],
      ["write", "/opt/stage/etc/systemd/system/blockx-worker.service"],
    ]);
    const unit = steps.at(-1) as { content: string };
    expect(unit.content).toContain("ExecStart=/opt/stage/usr/local/bin/blockx worker");
    expect(unit.content).toContain("EnvironmentFile=/opt/stage/etc/blockx/worker.env");
  });

  test("with prefix / the unit is the shipped one, byte for byte", () => {
    const steps = planInstall("worker", files, "/", "/tmp/blockx", () => null);
    expect((steps.at(-1) as { content: string }).content).toBe(files.unit);
  });

  test("an edited env file is kept and the template goes beside it as .new; an unchanged one is left", () => {
    // A re-install (an upgrade) on a host whose worker.env names its own etcd.
    const l = installLayout("/", "worker");
    const edited = files.env.replace("etcd-1.internal:2379", "10.0.0.9:2379");
    const steps = planInstall("worker", files, "/", "/tmp/blockx", (p) => (p === l.env ? edited : p === l.chains ? files.chains : null));
    expect(steps.filter((s) => s.kind !== "copyBinary").map((s) => [s.kind, "path" in s ? s.path : ""])).toEqual([
      ["keep", "/etc/blockx/worker.env"],
      ["write", "/etc/blockx/worker.env.new"],
      ["keep", "/etc/blockx/chains.json"],
      ["write", "/etc/systemd/system/blockx-worker.service"],
    ]);
    expect(steps.some((s) => s.kind === "write" && s.path === l.env)).toBe(false);
  });

  test("a Coordinator gets no chains.json", () => {
    const steps = planInstall("coordinator", deployFiles.coordinator, "/", "/tmp/blockx", () => null);
    expect(steps.some((s) => "path" in s && s.path.endsWith("chains.json"))).toBe(false);
  });
});
