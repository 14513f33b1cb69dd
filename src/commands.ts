import { certsCommand } from "./cli/certs-command";
import { clientCommands } from "./cli/client-commands";
import { etcdRolesCommand } from "./cli/etcd-roles-command";
import { execCommand } from "./cli/exec-command";
import { verifyCommand } from "./cli/verify-command";
import { followCommand } from "./follow/app/follow-command";
import { installCommand } from "./cli/install/install-command";
import { uninstallCommand } from "./cli/install/uninstall-command";
import { localchainCommand } from "./cli/localchain-command";
import { CommandRegistry } from "./cli/registry";
import { uiCommand } from "./cli/ui-command";
import { versionCommand } from "./cli/version-command";
import { coordinatorCommands } from "./coordinator/app/coordinator-command";
import { devCommand } from "./dev/app/dev-command";
import { doctorCommand } from "./doctor/doctor-command";
import { proxyCommand } from "./proxy/app/proxy-command";
import { syncInvokerCommand } from "./syncinvoker/app/syncinvoker-command";
import { workerCommands } from "./worker/app/worker-command";

/**
 * blockxCommands: every command of the binary, in the order `blockx --help` lists them. Each
 * component registers its own command from its own folder; adding one is a file there and a
 * line here. `dev` comes last: it learns from this list which roles exist and their variables.
 */
export function blockxCommands(): CommandRegistry {
  const registry = new CommandRegistry([
    ...coordinatorCommands,
    ...workerCommands,
    syncInvokerCommand,
    ...clientCommands,
    verifyCommand,
    followCommand,
    proxyCommand,
    execCommand,
    localchainCommand,
    uiCommand,
    versionCommand,
    installCommand,
    uninstallCommand,
    doctorCommand,
    certsCommand,
    etcdRolesCommand,
  ]);
  return registry.register(devCommand(() => registry.list()));
}
