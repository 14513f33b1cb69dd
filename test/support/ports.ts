/**
 * Tests pick free ports the way `blockx dev` does (below the kernel's ephemeral range, where no
 * `listen(0)` or outgoing connection can take one between the pick and the bind): one
 * implementation, in src/dev/adapters/free-port.ts.
 */
export { freePort, freePorts } from "../../src/dev/adapters/free-port";
