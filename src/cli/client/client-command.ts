import type { BlockxClient } from "../../sdk/blockx-client";
import { clientVars, loadClientConfig, type ClientConfig } from "../../sdk/client-config";
import { BlockxError } from "../../sdk/sdk-error";
import type { FlagSpecs, ParsedArgs, PositionalSpec } from "../args";
import type { Command } from "../command";
import { exitCodeOfError } from "./exit-codes";

/** ClientCommandMeta: what `--help` shows and which flags are the command's own. */
export interface ClientCommandMeta {
  readonly name: string;
  readonly summary: string;
  /** Usage lines and the command's own flags, printed by --help above the configuration. */
  readonly usage: string;
  readonly flags: FlagSpecs;
  /** Its positional arguments (none when absent). */
  readonly positionals?: PositionalSpec;
  /** The client variables this command reads: its --help lists these and no others. */
  readonly reads: readonly ClientVarKey[];
}

export type ClientVarKey = keyof typeof clientVars;

/** varsOf picks the command's own variables out of clientVars, in clientVars' order. */
export function varsOf(reads: readonly ClientVarKey[]): Partial<typeof clientVars> {
  return Object.fromEntries(Object.entries(clientVars).filter(([k]) => reads.includes(k as ClientVarKey))) as Partial<typeof clientVars>;
}

/** ClientCommandRun returns the exit code. */
export type ClientCommandRun = (args: ParsedArgs, client: BlockxClient, config: ClientConfig) => Promise<number>;

/**
 * clientCommand wraps a client command: flags and configuration parsed the same way for all,
 * an SDK error printed as one line and mapped to the documented exit code, channels closed.
 */
export function clientCommand(spec: ClientCommandMeta, load: () => Promise<ClientCommandRun>): Command {
  return {
    name: spec.name,
    summary: spec.summary,
    usage: spec.usage,
    vars: varsOf(spec.reads),
    // Every client variable is accepted as a flag, as loadClientConfig reads them all.
    acceptedVars: clientVars,
    flags: { json: "bool", ...spec.flags },
    ...(spec.positionals ? { positionals: spec.positionals } : {}),
    async run(args) {
      const config = loadClientConfig(process.env, args.configArgv);
      // Loaded on use, so that `--help` and the server roles never load grpc-js for these.
      const [{ BlockxClient }, run] = await Promise.all([import("../../sdk/blockx-client"), load()]);
      const client = new BlockxClient(config);
      let code: number;
      try {
        code = await run(args, client, config);
      } catch (e) {
        if (!(e instanceof BlockxError)) throw e;
        if (args.flags.has("json")) console.log(JSON.stringify({ error: { code: e.code, message: e.message } }));
        console.error(`blockx ${spec.name}: ${e.message}`);
        code = exitCodeOfError(e.code);
      } finally {
        client.close();
      }
      process.exitCode = code;
      // Nothing should hold the process open now; if a library does, leave anyway.
      setTimeout(() => process.exit(code), 200).unref();
    },
  };
}
