import { versionLine } from "../common/build-info";
import type { Command } from "./command";

/** `blockx version` (also `blockx --version`). */
export const versionCommand: Command = {
  name: "version",
  summary: "print version, commit, build date, target, Bun version and the digest of the sources built",
  vars: {},
  async run() {
    console.log(versionLine());
  },
};
