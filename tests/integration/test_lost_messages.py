"""FLIP-6's lost and duplicated messages (seed 004, slot allocation from a new
TaskManager), injected on purpose through ``test.rpc.faults`` on the local target with
real executor processes: each is retried or reconciled, the job's output is exact, and
the ResourceManager ends with no slot still allocated, no request pending, and no
worker left once the executors idled out."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from tests.conftest import FAST, executor_logs, wait_until
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.conf import Configuration
from yarnflow.client.targets.local import LocalCluster

ROWS = 20_000
TABLE = pa.table({"k": pa.array(range(ROWS), pa.int64()),
                  "v": pa.array([i * 0.5 for i in range(ROWS)])})


def run_with_faults(tmp_path: Path, faults: str) -> tuple[LocalCluster, list[str], int]:
    """Run a two-subtask job (source, rebalance, map, sink: one slot and so one executor
    per subtask) with ``faults``; returns the stopped cluster, the faults injected (as
    the ApplicationMaster's and the executors' logs name them), and how many workers
    the ResourceManager started."""
    config = Configuration.load(overrides=[*FAST, f"test.rpc.faults={faults}",
                                           "test.rpc.faults.seed=16",
                                           "pipeline.batch-rows=1000"])
    out = tmp_path / "out"
    p = yf.Pipeline("lossy", parallelism=2)
    p.from_arrow(TABLE).rebalance().map(lambda b: b, name="identity").write_parquet(str(out))
    (tmp_path / "logs").mkdir()
    with LocalCluster(config, log_dir=tmp_path / "logs") as cluster:
        result = cluster.submit(p.job_graph(config)).wait(120)
        logs = executor_logs(tmp_path / "logs", lines=400)
        assert result.status is JobStatus.FINISHED, f"{result.failure}\n{logs}"
        assert pq.read_table(out).sort_by("k").equals(TABLE), "the output is not exact"

        rm = cluster.resource_manager

        def settled() -> bool:
            view = rm.main.call(rm.overview)
            return view.pending_slot_requests == 0 and view.pending_workers == 0 and \
                all(w.free_slots == w.num_slots for w in view.workers)
        wait_until(settled, 30, "every slot free and no request pending at the "
                   "ResourceManager (a slot or request leaked)", interval=0.1)
        wait_until(lambda: not rm.main.call(rm.overview).workers, 30,
                   "the idle executors to be released (a worker leaked)", interval=0.1)
        started = sum(rm.main.call(rm.overview).workers_started_per_spec.values())
    injections = [line.split("injected fault: ", 1)[1]
                  for line in executor_logs(tmp_path / "logs", lines=10_000).splitlines()
                  if "injected fault: " in line]
    return cluster, injections, started


def injected(faults: list[str], what: str) -> int:
    return sum(1 for f in faults if f == what)


@pytest.mark.parametrize("action", ["drop", "drop-answer", "duplicate"])
def test_a_slot_request_lost_or_duplicated_is_asked_again_and_served_once(tmp_path, action):
    """Messages 4 and 6: the JobMaster asks again under the same AllocationID; the
    ResourceManager starts no second worker for it."""
    _, faults, started = run_with_faults(tmp_path, f"RequestSlot={action}:1:2")
    assert injected(faults, f"{action} of /yarnflow.ResourceManager/RequestSlot") == 2
    assert started == 2, f"{started} workers for 2 slot requests"


@pytest.mark.parametrize("action", ["drop", "drop-answer"])
def test_a_lost_registration_is_sent_again_and_known_by_resource_id(tmp_path, action):
    """Message 10: each executor's first registration (or its answer) is lost."""
    _, faults, started = run_with_faults(tmp_path, f"RegisterTaskExecutor={action}:1:1")
    assert injected(faults, f"{action} of /yarnflow.ResourceManager/RegisterTaskExecutor") == 2
    assert started == 2


@pytest.mark.parametrize("action", ["drop", "drop-answer"])
def test_a_lost_job_master_registration_is_sent_again_and_the_submission_goes_on(
        tmp_path, action):
    """A submitted job's JobMaster registers with the ResourceManager: its first two
    registrations (or their answers) are lost. The submission failed with the raw
    gRPC error before (found by random jobs under random losses)."""
    _, faults, started = run_with_faults(tmp_path, f"RegisterJobMaster={action}:1:2")
    assert injected(faults, f"{action} of /yarnflow.ResourceManager/RegisterJobMaster") == 2
    assert started == 2


def test_a_duplicated_slot_offer_is_accepted_once(tmp_path):
    """Message 12: every offer arrives twice."""
    _, faults, started = run_with_faults(tmp_path, "OfferSlots=duplicate")
    assert injected(faults, "duplicate of /yarnflow.JobMaster/OfferSlots") >= 2
    assert started == 2


def test_lost_slot_reports_are_corrected_by_the_next_heartbeat(tmp_path):
    """Message 13: no executor's 'slot free' report arrives; the slot reports in the
    heartbeats free the slots at the ResourceManager, and the idle executors go."""
    _, faults, _ = run_with_faults(tmp_path, "NotifySlotAvailable=drop")
    assert injected(faults, "drop of /yarnflow.ResourceManager/NotifySlotAvailable") >= 2


def test_a_lost_answer_to_an_offer_is_offered_again_and_known_by_allocation_and_resource(
        tmp_path):
    """Message 14: the JobMaster accepted, its answer is lost; the executor offers
    again and the JobMaster recognises (AllocationID, ResourceID)."""
    _, faults, started = run_with_faults(tmp_path, "OfferSlots=drop-answer:1:1")
    assert injected(faults, "drop-answer of /yarnflow.JobMaster/OfferSlots") == 2
    assert started == 2


def test_chaos_lost_and_duplicated_calls_and_two_killed_executors_leave_the_output_exact(
        tmp_path):
    """About a minute of work with 5 % of all control-plane calls lost and 5 %
    duplicated, and two executors, drawn at random, killed along the way."""
    import os
    import random
    import signal
    from tests.integration.test_failover import (BATCH_ROWS, RESTART_FAST, ROWS, assert_exact,
                                                 pipelined_job, rows_through)
    config = Configuration.load(overrides=[
        *FAST, *RESTART_FAST, f"pipeline.batch-rows={BATCH_ROWS}",
        "test.rpc.faults=*=drop:0.05; *=duplicate:0.05", "test.rpc.faults.seed=8",
        "restart-strategy.exponential-delay.attempts-before-reset-backoff=20"])
    progress, out = tmp_path / "progress", tmp_path / "out"
    (tmp_path / "logs").mkdir()
    chance = random.Random(8)
    with LocalCluster(config, log_dir=tmp_path / "logs") as cluster:
        rm = cluster.resource_manager
        client = cluster.submit(pipelined_job(out, progress).job_graph(config))
        killed = []
        for threshold in (ROWS // 3, ROWS // 3 + ROWS // 2):
            wait_until(lambda: rows_through(progress) >= threshold, 180,
                       f"{threshold} rows mapped", interval=0.2)
            live = sorted(w.resource_id for w in rm.main.call(rm.overview).workers
                          if cluster.driver.pid_of(w.resource_id))
            victim = chance.choice(live)
            os.kill(cluster.driver.pid_of(victim), signal.SIGKILL)
            killed.append(victim)
        result = client.wait(300)
        logs = executor_logs(tmp_path / "logs", lines=400)
        assert result.status is JobStatus.FINISHED, f"{result.failure}\n{logs}"
        assert_exact(out)
        assert result.details.restarts >= 2, "two executors were killed"

        def settled() -> bool:
            view = rm.main.call(rm.overview)
            return view.pending_slot_requests == 0 and view.pending_workers == 0 and \
                all(w.free_slots == w.num_slots for w in view.workers)
        wait_until(settled, 60, "every slot free and no request pending (a slot or "
                   "request leaked)", interval=0.2)
        wait_until(lambda: not rm.main.call(rm.overview).workers, 60,
                   "the idle executors to be released (a worker leaked)", interval=0.2)
    injections = [line for line in executor_logs(tmp_path / "logs", lines=100_000).splitlines()
                  if "injected fault: " in line]
    assert sum("drop of" in line for line in injections) >= 10
    assert sum("duplicate of" in line for line in injections) >= 10
