"""The pure parts, against the TypeScript SDK's own cases (src/sdk/core/*.test.ts)."""
from blockx import build_task, cluster_for, resubmit_by_default, task_from_dict
from blockx.policy import GiveUp, ProgressMeter, ReservePolicy, Retry, RetryPolicyConfig

CFG = RetryPolicyConfig(slot_ttl_ms=5000, backoff_base_ms=100, backoff_max_ms=1600, unavailable_jitter_ms=50)
SRC = "def main(ctx, x):\n    return x\n"


def test_unavailable_next_coordinator_with_jitter_then_backoff_after_a_round():
    p = ReservePolicy(CFG, 2)
    assert p.decide("UNAVAILABLE", 0, 60_000, 0.5) == Retry(25, True)
    assert p.decide("UNAVAILABLE", 0, 60_000, 1) == Retry(50, True)
    assert p.decide("UNAVAILABLE", 0, 60_000, 1) == Retry(100, True)


def test_resource_exhausted_exponential_capped_and_reset_by_success():
    p = ReservePolicy(CFG, 2)
    assert [p.decide("RESOURCE_EXHAUSTED", 0, 60_000, 1).delay_ms for _ in range(6)] == [100, 200, 400, 800, 1600, 1600]
    assert ReservePolicy(CFG, 2).decide("RESOURCE_EXHAUSTED", 0, 60_000, 0) == Retry(50, False)
    p.succeeded()
    assert p.decide("RESOURCE_EXHAUSTED", 0, 60_000, 1).delay_ms == 100


def test_giving_up_codes():
    p = ReservePolicy(CFG, 1)
    p.decide("RESOURCE_EXHAUSTED", 0, 1000, 1)
    assert p.decide("UNAVAILABLE", 999, 1000, 1) == GiveUp("NO_CAPACITY")
    p.succeeded()
    assert p.decide("UNAVAILABLE", 999, 1000, 1) == GiveUp("UNREACHABLE")


def test_aborted_waits_a_slot_ttl():
    p = ReservePolicy(CFG, 1)
    assert p.decide("ABORTED", 0, 60_000, 0) == Retry(5000, False)
    assert p.decide("ABORTED", 0, 60_000, 0.5) == Retry(5500, False)
    assert p.decide("ABORTED", 56_000, 60_000, 0) == GiveUp("NO_CAPACITY")


def test_cluster_choice_and_resubmission_default():
    blocks = build_task(source=SRC, blocks=range(0, 10), table="t")
    bundle = build_task(source=SRC, blocks=range(0, 10), bundle_size=5, table="t")
    inputs_ret = build_task(source=SRC, inputs=[1])
    inputs_tab = build_task(source=SRC, inputs=[1], table="t")
    assert [cluster_for(t) for t in (blocks, bundle, inputs_ret, inputs_tab)] == ["block", "bundle", "block", "bundle"]
    assert cluster_for(inputs_tab, "block") == "block"
    # Every output reruns safely now (a normal table's call replaces what the same call of the lost run wrote).
    assert [resubmit_by_default(t) for t in (blocks, bundle, inputs_ret, inputs_tab)] == [True, True, True, True]
    appended = build_task(source=SRC, blocks=range(0, 10), table="t", append=True)
    assert appended.outputs[0].WhichOneof("handler") == "normal_table_write" and resubmit_by_default(appended)
    assert blocks.function_call_config.block_table.to_block == 9  # range end is exclusive, to_block inclusive


def test_task_dict_snake_case_and_json_inputs():
    t = task_from_dict({"task_id": "t1", "function_call_config": {"function": {"source": SRC}, "inputs": {"inputs": [{"a": 1}, 2]}},
                        "outputs": [{"return_value": {}}]})
    assert t.task_id == "t1" and list(t.function_call_config.inputs.inputs) == [b'{"a":1}', b"2"]


def test_progress_meter_rate_and_eta():
    m = ProgressMeter()
    m.update(100, 0, 0, 0)
    p = m.update(100, 40, 10, 1000)
    assert p.done == 50 and p.failed == 10 and p.rate_per_s == 50 and p.eta_ms == 1000 and p.fraction == 0.5


def test_a_run_elsewhere_refusal_reads_back_to_where_the_run_is():
    # The Worker's words (src/common/run-elsewhere.ts writes them; both clients read them the same way).
    from blockx._run_elsewhere import parse_run_elsewhere
    running = "[TASK_RUN_ELSEWHERE] task backfill-1 is running on 10.0.0.7:7000 (run 3): a task id runs once in the cluster; follow it there, or resubmit it to replace that run"
    assert parse_run_elsewhere(running) == ("backfill-1", "10.0.0.7:7000", 3, "RUNNING")
    done = "task t already SUCCEEDED on [::1]:50051 (run 1): its result is there; resubmit it to run it again"
    assert parse_run_elsewhere(done) == ("t", "[::1]:50051", 1, "SUCCEEDED")
    assert parse_run_elsewhere("no slot") is None
