import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockxProcess } from "./blockx-process";
import { EtcdProcess } from "./etcd";
import { startPostgres } from "./postgres";
import { makeSuiteCerts, suiteTls } from "./suite-tls";
import { TestCa } from "./test-ca";

// One etcd and one Postgres for the whole run, started here rather than in a test file's
// beforeAll: a test timeout kills every process its file spawned. Tests that need to stop
// either start their own. Tests get a database of their own with freshDatabase().
const [shared, postgres] = await Promise.all([EtcdProcess.start(), startPostgres()]);
// mTLS unless a test chooses plaintext (BLOCKX_INSECURE=1): one CA for the run and a certificate
// per role (test/support/suite-tls.ts); spawned roles get their role's, in-process clients and
// anything reading this environment the client's.
const tlsDir = mkdtempSync(join(tmpdir(), "blockx-suite-tls-"));
makeSuiteCerts(tlsDir);
process.env.BLOCKX_TEST_TLS_DIR = tlsDir;
if (!process.env.BLOCKX_TLS_CERT_FILE && process.env.BLOCKX_INSECURE === undefined) Object.assign(process.env, suiteTls("client"));
process.env.BLOCKX_TEST_ETCD_ENDPOINT = shared.endpoint;
process.env.BLOCKX_TEST_POSTGRES_URL = postgres.url();

afterAll(async () => {
  // Processes a test left running first: they may be using the CAs' files, etcd or Postgres.
  await BlockxProcess.reapUnstopped();
  TestCa.removeAll();
  await Promise.all([shared.destroy(), postgres.destroy()]);
  rmSync(tlsDir, { recursive: true, force: true });
});
