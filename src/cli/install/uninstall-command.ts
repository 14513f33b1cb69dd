import { existsSync, rmSync } from "node:fs";
import type { Command } from "../command";
import { deployFiles } from "./deploy-files";
import { installArgs, installedUnits } from "./install-command";
import { installLayout } from "./install-plan";

const UNINSTALL_USAGE = `usage: blockx uninstall ROLE [--prefix DIR] [--dry-run] [--purge]

Removes what \`blockx install ROLE\` put under DIR (default /): the unit, and the binary once no other
blockx unit is installed there. The environment file and chains.json are the operator's and stay,
unless --purge (then ROLE.env, ROLE.env.new, and chains.json with its .new when no other role
installed there reads it). Stop the unit first: systemctl disable --now blockx-ROLE.`;

export const uninstallCommand: Command = {
  name: "uninstall",
  summary: "remove a role's unit (and the binary when no other role remains) (ROLE [--prefix DIR] [--dry-run] [--purge])",
  usage: UNINSTALL_USAGE,
  vars: {},
  flags: { prefix: "value", "dry-run": "bool", purge: "bool" },
  positionals: { required: ["ROLE"] },
  async run(parsed) {
    const args = installArgs(parsed);
    const l = installLayout(args.prefix, args.role);
    const unitName = `blockx-${args.role}.service`;
    const others = installedUnits(l.unitDir).filter((u) => u !== l.unit);
    const remove: string[] = [l.unit];
    if (others.length === 0) remove.push(l.binary);
    if (args.purge) {
      remove.push(l.env, `${l.env}.new`);
      const chainsReaders = others.filter((u) => ["worker", "bundle-worker", "syncinvoker"].some((r) => u.endsWith(`/blockx-${r}.service`)));
      if (deployFiles[args.role].chains !== null && chainsReaders.length === 0) remove.push(l.chains, `${l.chains}.new`);
    }
    console.log(`stop it first if it runs: systemctl disable --now ${unitName}`);
    for (const p of remove.filter((p) => existsSync(p))) {
      if (!args.dryRun) rmSync(p, { force: true });
      console.log(`${args.dryRun ? "would remove" : "removed"} ${p}`);
    }
    if (others.length > 0) console.log(`kept      ${l.binary} (still used by ${others.map((u) => u.slice(u.lastIndexOf("/") + 1)).join(", ")})`);
    if (!args.purge && existsSync(l.env)) console.log(`kept      ${l.env} (--purge removes it)`);
    if (args.prefix === "/") console.log("then: systemctl daemon-reload");
  },
};
