"""A JobMaster's lifecycle on a manual main thread and clock, with in-memory executors
and ResourceManager: every timeout is reached by advancing the clock, never by waiting."""
from __future__ import annotations

from collections import Counter

import pytest

from tests.unit.fakes import FINISHED, RUNNING, Harness, ManualMainThread, TestingScheduler
from tests.unit.test_scheduler import chain
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionState, JobStatus
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import ShipStrategy
from yarnflow.core.messages import SlotOffer, TaskExecutionState
from yarnflow.core.operators.sources import TableSource
from yarnflow.core.resources import ResourceSpec as R
from yarnflow.core.user_code import UserCode

HEARTBEAT_TIMEOUT, SLOT_TIMEOUT, CANCEL_TIMEOUT = 50.0, 300.0, 30.0


class MissingInput(TableSource):
    """A source whose input is not there."""

    def __init__(self) -> None:
        super().__init__(None)

    def create_input_splits(self, parallelism: int, max_split_bytes: int = 0) -> list[object]:
        raise FileNotFoundError("/data/missing")


def config() -> Configuration:
    return Configuration.load(overrides=[
        f"heartbeat.timeout={HEARTBEAT_TIMEOUT}", "heartbeat.interval=10",
        f"slot.request.timeout={SLOT_TIMEOUT}", f"job.cancel.timeout={CANCEL_TIMEOUT}",
        "restart-strategy.type=none"])


@pytest.fixture
def harness():
    h = Harness(chain(2), config(), main=ManualMainThread())
    yield h
    h.close()


@pytest.fixture
def shuffle_harness():
    """source(4) -HASH-> map(4) -> sink(4), on two executors."""
    h = Harness(chain(4, ship=ShipStrategy.HASH), config(), main=ManualMainThread())
    yield h
    h.close()


def run_all(h: Harness, state: int) -> None:
    for tdd in h.deployed():
        h.report(tdd.attempt_id, state)


def test_a_job_runs_from_created_to_finished_and_lets_go_of_everything(harness):
    h = harness
    assert h.jm.graph.status is JobStatus.CREATED
    h.start()
    assert h.jm.graph.status is JobStatus.RUNNING and len(h.rm.requests) == 2
    h.offer_pending(["te-1", "te-2"])
    assert len(h.deployed()) == 6
    run_all(h, RUNNING)
    assert not h.jm.result.done()
    run_all(h, FINISHED)
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FINISHED
    freed = h.executors["te-1"].freed + h.executors["te-2"].freed
    assert sorted(freed) == sorted({tdd.allocation_id for tdd in h.deployed()})
    assert h.rm.disconnected == "job FINISHED"
    h.jm.main.advance(3600)
    assert h.jm.main.pending_timers() == 0, "a finished job keeps no periodic timer"


def test_a_caller_racing_the_jobs_end_gets_the_end_not_an_error(harness):
    h = harness
    h.start()
    h.offer_pending(["te-1", "te-2"])
    run_all(h, FINISHED)
    assert h.jm.main.stopped                     # the ended job's thread is gone
    assert h.jm.details().status is JobStatus.FINISHED
    h.jm.cancel()                                # nothing left to cancel: no error
    heard = []
    h.jm.add_termination_listener(heard.append)
    assert [r.status for r in heard] == [JobStatus.FINISHED]


def test_an_executor_silent_past_the_heartbeat_timeout_fails_the_job(harness):
    h = harness
    h.start()
    h.offer_pending(["te-1", "te-2"])
    run_all(h, RUNNING)
    h.jm.main.advance(HEARTBEAT_TIMEOUT - 5)
    h.call(h.jm.heartbeat_from_task_executor, "te-1", [])       # te-2 stays silent
    h.jm.main.advance(4)
    assert h.jm.graph.status is JobStatus.RUNNING           # 49 s: not yet
    h.jm.main.advance(12)                                   # the check after 50 s
    assert h.jm.graph.status in (JobStatus.FAILING, JobStatus.FAILED)
    assert "te-2 sent no heartbeat for 50 s (heartbeat.timeout)" in h.jm.graph.failure
    assert h.executors["te-1"].cancelled, "the live executor's subtasks were cancelled"
    h.jm.main.advance(CANCEL_TIMEOUT)
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FAILED and "heartbeat.timeout" in result.failure
    assert all(e.state.is_terminal for e in h.jm.graph.current_executions())


def test_a_slot_request_unanswered_past_its_timeout_fails_the_job(harness):
    h = harness
    h.start()
    h.jm.main.advance(SLOT_TIMEOUT - 1)
    assert h.jm.graph.status is JobStatus.RUNNING
    h.jm.main.advance(2)
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FAILED and "slot.request.timeout" in result.failure
    assert h.rm.requests == {}, "its slot requests were withdrawn"


def test_cancel_waits_for_the_executors_then_gives_up_after_the_cancel_timeout(harness):
    h = harness
    h.start()
    h.offer_pending(["te-1", "te-2"])
    run_all(h, RUNNING)
    h.jm.cancel()
    assert h.jm.graph.status is JobStatus.CANCELLING
    canceling = [e for e in h.jm.graph.current_executions()
                 if e.state is ExecutionState.CANCELING]
    assert len(canceling) == 6
    first = h.deployed()[0]
    h.report(first.attempt_id, int(ExecutionState.CANCELED))
    h.jm.main.advance(CANCEL_TIMEOUT - 1)
    assert not h.jm.result.done()
    h.jm.main.advance(1)
    assert h.jm.result.result(timeout=0).status is JobStatus.CANCELED


def test_a_pooled_slot_moves_only_between_free_and_allocated():
    from yarnflow.appmaster.jobmaster.slotpool.slot_pool import HeldSlotState, _Held
    from yarnflow.appmaster.jobmaster.slotpool.slots import PhysicalSlot
    from yarnflow.core.messages import TaskExecutorLocation
    from yarnflow.core.resources import ResourceSpec
    from yarnflow.core.status import IllegalStateTransition

    held = _Held(PhysicalSlot("a1", TaskExecutorLocation("te", "h"), 0, ResourceSpec(1, 512)), 0.0)
    assert held.state is HeldSlotState.FREE
    with pytest.raises(IllegalStateTransition):
        held.transition(HeldSlotState.FREE, 1.0)     # freeing a free slot is a bug
    held.transition(HeldSlotState.ALLOCATED, 2.0)
    assert held.since == 0.0
    held.transition(HeldSlotState.FREE, 3.0)
    assert held.since == 3.0                         # idle time counts from the release


class Unreachable(Exception):
    """What a gateway raises for an executor that does not answer (grpc's UNAVAILABLE)."""

    def __str__(self) -> str:
        return "UNAVAILABLE: Stream removed (Socket closed)"


def test_a_deployment_to_a_dying_executor_waits_for_its_loss_to_be_the_cause(harness):
    """A subtask deployed to an executor whose process is exiting fails to deploy; the
    executor's loss, with its exit code and log, arrives a moment later and is what
    the job reports."""
    h = harness
    h.start()
    h.executor("te-2").submit_error = Unreachable()
    h.offer_pending(["te-1", "te-2"])
    assert h.jm.graph.status is JobStatus.RUNNING, "failed at once, before the real cause"
    h.call(h.jm.disconnect_task_executor, "te-2", "process exited with code 3 (log: te-2.log)")
    h.jm.main.advance(CANCEL_TIMEOUT)
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FAILED and "exited with code 3" in result.failure, \
        result.failure


def test_an_unexplained_failed_deployment_fails_the_job_after_the_grace(harness):
    h = harness
    h.start()
    h.executor("te-2").submit_error = Unreachable()
    h.offer_pending(["te-1", "te-2"])
    h.jm.main.advance(2.0)                       # jobmaster.upstream-failure.grace
    h.jm.main.advance(CANCEL_TIMEOUT)
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FAILED and "could not deploy" in result.failure


def test_a_deployment_naming_parts_its_executor_does_not_hold_is_sent_again_with_them(
        shuffle_harness):
    """The shared parts (task information, shuffle descriptors) go to each executor once;
    one that let them go refuses the next deployment that only names them, and gets it
    again with the parts."""
    h = shuffle_harness
    h.start()
    h.executor("te-2").forgets_parts = True
    h.offer_pending(["te-1", "te-2"])
    kept, forgot = h.executor("te-1"), h.executor("te-2")
    assert len(h.deployed()) == 12
    carried = Counter(p.key for tdd in kept.submitted for p in tdd.carried)
    assert kept.refused == [] and set(carried.values()) == {1}, \
        "an executor that keeps the parts is sent each once"
    assert forgot.refused, "te-2 was sent deployments that named parts it let go"
    refused = [tdd.attempt_id for tdd in forgot.refused]
    assert len(set(refused)) == len(refused), "sent again once, with its parts"
    resent = {tdd.attempt_id: tdd for tdd in forgot.submitted}
    for attempt_id in refused:
        tdd = resent[attempt_id]
        assert {p.key for p in tdd.carried} == {p.key for p in tdd.shared_parts()}
    run_all(h, RUNNING)
    run_all(h, FINISHED)
    assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED


# --- the JobMaster as a shell around its scheduler ---------------------------------------
def shell(graph=None) -> tuple[Harness, TestingScheduler]:
    config = Configuration.load(overrides=[f"heartbeat.timeout={HEARTBEAT_TIMEOUT}",
                                           "heartbeat.interval=10"])
    h = Harness(graph or chain(2), config, main=ManualMainThread(),
                scheduler_factory=TestingScheduler)
    return h, h.jm.scheduler


def offer_from(h: Harness, resource_id: str) -> list[str]:
    """An unsolicited slot from ``resource_id``: it becomes one of the job's executors."""
    te = h.executor(resource_id)
    return h.call(h.jm.offer_slots, te.location, [SlotOffer(f"{resource_id}-s0", 0, R(1, 1024))])


def test_the_jobmaster_hands_reports_and_losses_to_its_scheduler_and_shuts_out_a_lost_executor():
    h, scheduler = shell()
    h.start()
    assert scheduler.calls == [("start",)]
    offer_from(h, "te-1")
    h.report("attempt-x", RUNNING)
    h.call(h.jm.notify_partition_data_available, "attempt-x", "result-y")
    assert scheduler.calls[1:] == [("update", "attempt-x", RUNNING),
                                   ("partition_has_data", "attempt-x", "result-y")]
    # an attempt the job does not know, running there: the executor is told to cancel it
    h.call(h.jm.heartbeat_from_task_executor, "te-1",
           [TaskExecutionState("stray", ExecutionState.RUNNING)])
    assert h.executors["te-1"].cancelled == ["stray"]
    h.call(h.jm.disconnect_task_executor, "te-1", "TaskExecutor te-1 was lost: killed")
    h.call(h.jm.disconnect_task_executor, "te-1", "heard twice")
    assert [c for c in scheduler.calls if c[0] == "executor_lost"] == [
        ("executor_lost", "te-1", "TaskExecutor te-1 was lost: killed")]
    assert offer_from(h, "te-1") == [], "a lost executor's slots are not taken again"
    h.close()


def test_an_executor_silent_past_the_heartbeat_timeout_is_lost_only_if_the_job_depends_on_it():
    h, scheduler = shell()
    h.start()
    offer_from(h, "te-1")
    offer_from(h, "te-2")
    scheduler.needed = {"te-1"}
    h.jm.main.advance(HEARTBEAT_TIMEOUT + 10)
    (lost,) = [c for c in scheduler.calls if c[0] == "executor_lost"]
    assert lost[1] == "te-1" and "heartbeat.timeout" in lost[2]
    scheduler.needed = {"te-2"}          # te-2 was forgotten quietly: nothing to lose there
    h.jm.main.advance(HEARTBEAT_TIMEOUT + 10)
    assert [c[1] for c in scheduler.calls if c[0] == "executor_lost"] == ["te-1"]
    h.close()


def test_a_source_that_cannot_list_its_input_fails_the_job_at_start_not_when_it_is_made():
    graph = chain(2)
    next(v for v in graph.vertices.values() if v.num_inputs == 0).operator = UserCode.of(MissingInput())
    h, scheduler = shell(graph)
    assert scheduler.calls == [], "making a JobMaster lists nothing"
    h.start()
    (failed,) = scheduler.calls
    assert failed[0] == "fail_before_start" and "source 'source' cannot read its input" in failed[1]
    assert "/data/missing" in failed[1]
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FAILED and "/data/missing" in result.failure


def _gone() -> None:
    raise ImportError("No module named 'retired_sinks'")


class Unloadable:
    """A committer whose code is not where the ApplicationMaster runs."""

    def check_submittable(self) -> None:
        pass

    def __reduce__(self):
        return (_gone, ())


def test_a_committer_that_does_not_load_fails_the_job_at_start_naming_its_sink():
    graph = chain(2)
    next(v for v in graph.vertices.values() if v.name == "sink").committer = UserCode.of(Unloadable())
    h = Harness(graph, Configuration.load(), main=ManualMainThread())
    h.start()
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FAILED
    assert "sink 'sink': its committer cannot be loaded: ImportError" in result.failure, result.failure
