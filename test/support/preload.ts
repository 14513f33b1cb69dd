import { afterAll } from "bun:test";
import { EtcdProcess } from "./etcd";
import { startPostgres } from "./postgres";

// One etcd and one Postgres for the whole run, started here rather than in a test file's
// beforeAll: a test timeout kills every process its file spawned. Tests that need to stop
// either start their own. Tests get a database of their own with freshDatabase().
const [shared, postgres] = await Promise.all([EtcdProcess.start(), startPostgres()]);
// Plaintext unless a test chooses otherwise: in-process SDK clients and children that inherit
// this environment need a transport chosen (test/security passes BLOCKX_TLS_* explicitly).
if (!process.env.BLOCKX_TLS_CERT_FILE && process.env.BLOCKX_INSECURE === undefined) process.env.BLOCKX_INSECURE = "1";
process.env.BLOCKX_TEST_ETCD_ENDPOINT = shared.endpoint;
process.env.BLOCKX_TEST_POSTGRES_URL = postgres.url();

afterAll(async () => {
  await Promise.all([shared.destroy(), postgres.destroy()]);
});
