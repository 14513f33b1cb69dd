import { envVar, intSchema } from "../config/env-config";

/** The clock check's variables: the Worker's (measured each heartbeat cycle) and `blockx doctor`'s. */
export const clockVars = {
  clockMaxOffsetMs: envVar(
    "CLOCK_MAX_OFFSET_MS",
    "2500",
    "an integer from 1 to 86400000",
    "tolerated offset of this host's clock from etcd's; beyond it the Worker logs an error and `blockx doctor` fails " +
      "(2500 = a quarter of the Coordinators' 10 s COORDINATOR_HEARTBEAT_TIMEOUT_MS)",
    intSchema(1, 86_400_000),
  ),
  clockTestOffsetMs: envVar(
    "CLOCK_TEST_OFFSET_MS",
    "0",
    "an integer from -86400000 to 86400000",
    "added to this host's clock readings when the offset is measured: a skewed clock for drills and tests (0 in production)",
    intSchema(-86_400_000, 86_400_000),
  ),
};
