import { basename, dirname, resolve } from "node:path";

const PROFILING_MARK = "BLOCKX_CPU_PROFILING";

/**
 * maybeRunUnderCpuProfiler re-executes this process under Bun's sampling CPU profiler when
 * `profilePath` is set (the seed's COORDINATOR_CPU_PROFILE): Bun only profiles from process
 * start, so the parent becomes a thin supervisor that forwards signals and exits with the
 * child's code; the child writes a Chrome `.cpuprofile` to `profilePath` when it exits.
 * Returns false when the caller should simply go on (no profile asked, or already the child).
 */
export async function maybeRunUnderCpuProfiler(profilePath: string): Promise<boolean> {
  if (profilePath === "" || process.env[PROFILING_MARK] === "1") return false;
  const abs = resolve(profilePath);
  const self = Bun.isStandaloneExecutable ? [process.execPath] : [process.execPath, Bun.main];
  const child = Bun.spawn([...self, ...process.argv.slice(2)], {
    stdio: ["inherit", "inherit", "inherit"],
    env: {
      ...process.env,
      [PROFILING_MARK]: "1",
      BUN_OPTIONS: `${process.env.BUN_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${dirname(abs)} --cpu-prof-name=${basename(abs)}`.trim(),
    },
  });
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => child.kill(sig));
  process.exit(await child.exited);
}
