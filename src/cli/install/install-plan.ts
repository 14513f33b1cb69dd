import { join } from "node:path";
import type { InstallRole, RoleFiles } from "./deploy-files";

/** InstallLayout: where a role's files go under a prefix ("/" for the real thing). */
export interface InstallLayout {
  readonly binary: string;
  readonly etcDir: string;
  readonly env: string;
  readonly chains: string;
  readonly unit: string;
  readonly unitDir: string;
}

export function installLayout(prefix: string, role: InstallRole): InstallLayout {
  const etcDir = join(prefix, "etc/blockx");
  const unitDir = join(prefix, "etc/systemd/system");
  return { binary: join(prefix, "usr/local/bin/blockx"), etcDir, env: join(etcDir, `${role}.env`), chains: join(etcDir, "chains.json"), unit: join(unitDir, `blockx-${role}.service`), unitDir };
}

export type InstallStep =
  | { readonly kind: "copyBinary"; readonly from: string; readonly to: string }
  | { readonly kind: "write"; readonly path: string; readonly content: string; readonly mode: number; readonly why: string }
  | { readonly kind: "keep"; readonly path: string; readonly why: string };

/**
 * unitFor: the shipped unit, pointed at the prefix's binary and environment file when the prefix
 * is not "/" (so that a unit installed under a prefix verifies and runs what was installed there).
 */
export function unitFor(files: RoleFiles, layout: InstallLayout, prefix: string): string {
  if (prefix === "/") return files.unit;
  return files.unit.replaceAll("/usr/local/bin/blockx", layout.binary).replaceAll("/etc/blockx/", `${layout.etcDir}/`);
}

/**
 * planInstall decides every step of `blockx install` from what is on disk now (`current(path)`
 * gives a file's text, or null when it is missing). The binary and the unit are ours: always put in
 * place. An environment file (and chains.json) is the operator's once it exists: an identical one
 * is left, an edited one is kept and the shipped template goes beside it as `<name>.new`.
 */
export function planInstall(role: InstallRole, files: RoleFiles, prefix: string, binaryFrom: string, current: (path: string) => string | null): InstallStep[] {
  const l = installLayout(prefix, role);
  const steps: InstallStep[] = [{ kind: "copyBinary", from: binaryFrom, to: l.binary }];
  const operatorFile = (path: string, template: string) => {
    const now = current(path);
    if (now === null) steps.push({ kind: "write", path, content: template, mode: 0o644, why: "from the shipped template: edit it for this host" });
    else if (now === template) steps.push({ kind: "keep", path, why: "unchanged from the shipped template" });
    else {
      steps.push({ kind: "keep", path, why: "edited on this host: kept as is" });
      steps.push({ kind: "write", path: `${path}.new`, content: template, mode: 0o644, why: `the shipped template, to compare with ${path}` });
    }
  };
  operatorFile(l.env, files.env);
  if (files.chains !== null) operatorFile(l.chains, files.chains);
  steps.push({ kind: "write", path: l.unit, content: unitFor(files, l, prefix), mode: 0o644, why: "the shipped unit; change it with a drop-in (systemctl edit), not here" });
  return steps;
}
