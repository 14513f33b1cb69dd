import { afterAll } from "bun:test";
import { EtcdProcess } from "./etcd";

// One etcd for the whole run, started here rather than in a test file's beforeAll: a test
// timeout kills every process its file spawned. Tests that need to stop etcd start their own.
const shared = await EtcdProcess.start();
process.env.BLOCKX_TEST_ETCD_ENDPOINT = shared.endpoint;

afterAll(async () => {
  await shared.destroy();
});
