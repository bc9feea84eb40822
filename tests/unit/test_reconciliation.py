"""State reconciliation on the JobMaster's side (issue 14, item 6): an executor's
heartbeat repairs a state report that was lost, an attempt the JobMaster does not want
is cancelled where it runs, cancelling an attempt the executor never had counts at
once, and a repeated split request gets the same split. Manual main thread and clock,
in-memory executors."""
from __future__ import annotations

import pytest

from tests.unit.fakes import RUNNING, Harness, ManualMainThread
from tests.unit.test_scheduler import chain
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionState, JobStatus
from yarnflow.conf import Configuration
from yarnflow.core.messages import TaskExecutionState

CANCEL_TIMEOUT = 30.0


@pytest.fixture
def h():
    config = Configuration.load(overrides=[
        "heartbeat.timeout=50", "heartbeat.interval=10", f"job.cancel.timeout={CANCEL_TIMEOUT}",
        "restart-strategy.type=none"])
    harness = Harness(chain(1), config, main=ManualMainThread())
    harness.start()
    harness.offer_pending(["te-1"])
    yield harness
    harness.close()


def state(attempt_id: str, s: ExecutionState) -> TaskExecutionState:
    return TaskExecutionState(attempt_id, s)


def test_lost_state_reports_are_repaired_by_the_next_heartbeat(h):
    attempts = [tdd.attempt_id for tdd in h.deployed()]
    assert len(attempts) == 3
    # every RUNNING and FINISHED report was lost; only heartbeats get through
    h.call(h.jm.heartbeat_from_task_executor, "te-1",
           [state(a, ExecutionState.RUNNING) for a in attempts])
    assert {e.state for e in h.jm.graph.current_executions()} == {ExecutionState.RUNNING}
    h.call(h.jm.heartbeat_from_task_executor, "te-1",
           [state(a, ExecutionState.FINISHED) for a in attempts])
    assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED


def test_a_failure_report_that_arrives_only_by_heartbeat_keeps_its_cause(h):
    first = h.deployed()[0].attempt_id
    failed = TaskExecutionState(first, ExecutionState.FAILED, "source (1/1) failed: ValueError: bad row")
    h.call(h.jm.heartbeat_from_task_executor, "te-1", [failed])
    h.jm.main.advance(CANCEL_TIMEOUT)
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FAILED and "ValueError: bad row" in result.failure


def test_an_attempt_the_job_master_does_not_want_is_cancelled_on_its_executor(h):
    attempts = [tdd.attempt_id for tdd in h.deployed()]
    h.call(h.jm.heartbeat_from_task_executor, "te-1",
           [state(a, ExecutionState.RUNNING) for a in attempts]
           + [state("zombie", ExecutionState.RUNNING), state("ended", ExecutionState.FINISHED)])
    assert h.executors["te-1"].cancelled == ["zombie"], \
        "the unknown running attempt is cancelled; an ended one needs nothing"
    assert all(e.state is ExecutionState.RUNNING for e in h.jm.graph.current_executions())


def test_a_heartbeat_from_an_executor_the_job_does_not_use_changes_nothing(h):
    attempt = h.deployed()[0].attempt_id
    h.call(h.jm.heartbeat_from_task_executor, "te-9", [state(attempt, ExecutionState.FINISHED)])
    assert h.jm.graph.attempts[attempt].state is ExecutionState.DEPLOYING


def test_cancelling_attempts_the_executor_does_not_have_counts_them_cancelled_at_once(h):
    for tdd in h.deployed():
        h.report(tdd.attempt_id, RUNNING)
    h.executors["te-1"].has_attempts = False       # e.g. the deployment never arrived
    h.jm.cancel()
    # no clock advance: not after job.cancel.timeout, now
    assert h.jm.result.result(timeout=0).status is JobStatus.CANCELED


def test_a_repeated_split_request_gets_the_same_split_and_the_next_one_another(h):
    source = h.deployed()[0]
    assert source.info.vertex_name == "source"
    ask = lambda n: h.call(h.jm.request_next_input_split, source.info.vertex_id,  # noqa: E731
                           source.attempt_id, n)
    h.report(source.attempt_id, RUNNING)
    first = ask(1)
    assert first is not None and ask(1) == first, "a retry must not take a second split"
    assert ask(2) != first
