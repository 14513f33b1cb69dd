import { copyFileSync, chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { flagValue, type ParsedArgs } from "../args";
import type { Command } from "../command";
import { UsageError } from "../usage-error";
import { deployFiles, INSTALL_ROLES, type InstallRole } from "./deploy-files";
import { installLayout, planInstall, type InstallStep } from "./install-plan";

/** InstallArgs: `ROLE [--prefix DIR] [--dry-run]` (+ `--purge` for uninstall). */
export interface InstallArgs {
  readonly role: InstallRole;
  readonly prefix: string;
  readonly dryRun: boolean;
  readonly purge: boolean;
}

/** installArgs: the role (checked) and the flags of `install`/`uninstall`, parsed by the registry's parser. */
export function installArgs(args: ParsedArgs): InstallArgs {
  const role = args.positional[0]!;
  if (!(INSTALL_ROLES as readonly string[]).includes(role)) throw new UsageError(`ROLE: one of ${INSTALL_ROLES.join(", ")}, got ${JSON.stringify(role)}`);
  const prefix = flagValue(args, "prefix") ?? "/";
  if (prefix === "") throw new UsageError("--prefix needs a folder");
  return { role: role as InstallRole, prefix: resolve(prefix), dryRun: args.flags.has("dry-run"), purge: args.flags.has("purge") };
}

const readOrNull = (path: string): string | null => (existsSync(path) ? readFileSync(path, "utf8") : null);

/** writeAtomically: a temporary file beside the target, renamed over it (a running binary keeps its old inode). */
function writeAtomically(path: string, write: (tmp: string) => void, mode: number): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  write(tmp);
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

function applyStep(s: InstallStep): string {
  if (s.kind === "keep") return `kept      ${s.path} (${s.why})`;
  if (s.kind === "copyBinary") {
    if (resolve(s.from) === resolve(s.to)) return `kept      ${s.to} (this binary is already there)`;
    writeAtomically(s.to, (tmp) => copyFileSync(s.from, tmp), 0o755);
    return `installed ${s.to} (from ${s.from})`;
  }
  writeAtomically(s.path, (tmp) => writeFileSync(tmp, s.content), s.mode);
  return `wrote     ${s.path} (${s.why})`;
}

function describeStep(s: InstallStep): string {
  if (s.kind === "keep") return `would keep    ${s.path} (${s.why})`;
  if (s.kind === "copyBinary") return `would install ${s.to} (from ${s.from})`;
  return `would write   ${s.path} (${s.why})`;
}

/** verifyUnit runs `systemd-analyze verify` on the installed unit; null when it is clean. */
function verifyUnit(unit: string): string | null {
  let r;
  try {
    r = Bun.spawnSync(["systemd-analyze", "verify", "--man=no", unit], { env: { ...process.env, SYSTEMD_LOG_COLOR: "0" }, stdout: "pipe", stderr: "pipe" });
  } catch {
    return "systemd-analyze is not installed (Debian: apt-get install systemd): the unit was not verified";
  }
  const out = (r.stdout.toString() + r.stderr.toString()).trim();
  return r.exitCode === 0 && out === "" ? null : out || `systemd-analyze verify exited ${r.exitCode}`;
}

const INSTALL_USAGE = `usage: blockx install ROLE [--prefix DIR] [--dry-run]

Installs this binary for ROLE (${INSTALL_ROLES.join(", ")}): the binary as DIR/usr/local/bin/blockx,
DIR/etc/blockx/ROLE.env from the shipped template (an edited one is kept; the template goes beside it
as ROLE.env.new), chains.json for Workers and the Sync Invoker (same rule), and the unit
DIR/etc/systemd/system/blockx-ROLE.service; then runs systemd-analyze verify on the unit and prints
the systemctl commands that start it. DIR defaults to /. --dry-run prints the steps and changes nothing.
Upgrading is running it again with the new binary, then restarting (README "Upgrade").`;

export const installCommand: Command = {
  name: "install",
  summary: "install this binary, a role's environment file and its systemd unit (ROLE [--prefix DIR] [--dry-run])",
  usage: INSTALL_USAGE,
  vars: {},
  flags: { prefix: "value", "dry-run": "bool" },
  positionals: { required: ["ROLE"] },
  async run(parsed) {
    const args = installArgs(parsed);
    if (!Bun.isStandaloneExecutable) throw new UsageError("install copies the compiled binary: run it as dist/blockx or from a release archive, not from source");
    const layout = installLayout(args.prefix, args.role);
    const steps = planInstall(args.role, deployFiles[args.role], args.prefix, process.execPath, readOrNull);
    if (args.dryRun) {
      for (const s of steps) console.log(describeStep(s));
      console.log(`would verify  ${layout.unit} with systemd-analyze verify`);
      return;
    }
    for (const s of steps) console.log(applyStep(s));
    const problem = verifyUnit(layout.unit);
    if (problem !== null) {
      console.error(`blockx install: ${layout.unit} does not verify:\n${problem}`);
      process.exitCode = 1;
      return;
    }
    console.log(`verified  ${layout.unit} (systemd-analyze verify: clean)`);
    const unitName = `blockx-${args.role}.service`;
    console.log("");
    console.log(`next: edit ${layout.env}, check the host, then start the unit:`);
    console.log(`  ${layout.binary} doctor ${args.role} --env-file ${layout.env}`);
    if (args.prefix === "/") console.log(`  systemctl daemon-reload && systemctl enable --now ${unitName}`);
    else console.log(`  systemctl link ${layout.unit} && systemctl daemon-reload && systemctl enable --now ${unitName}`);
  },
};

/** installedUnits: the blockx units under a prefix (the binary stays while one remains). */
export function installedUnits(unitDir: string): string[] {
  try {
    if (!statSync(unitDir).isDirectory()) return [];
  } catch {
    return [];
  }
  return INSTALL_ROLES.map((r) => `${unitDir}/blockx-${r}.service`).filter((p) => existsSync(p));
}
