"""The TaskExecutor with an in-memory ResourceManager and JobMaster, on a manual
clock: registration with backoff and its deadline, heartbeats both ways, fenced slot
requests, offers, tasks and freed slots. Nothing sleeps."""
from __future__ import annotations

import grpc
import pytest

from yarnflow.conf import Configuration
from yarnflow.core.deployment import TaskDeploymentDescriptor, TaskInformation
from yarnflow.core.errors import FencingError, NotRegisteredYet, Refused
from yarnflow.core.messages import SlotAllocation
from yarnflow.core.resources import ResourceSpec
from yarnflow.taskexecutor.settings import TaskExecutorSettings
from yarnflow.taskexecutor.slot import TaskSlotTable
from yarnflow.taskexecutor.taskexecutor import Registration, TaskExecutor
from tests.unit.fakes import (FakeJobMasterGateway, FakeResourceManagerForExecutor, FakeTask,
                              ManualMainThread)
from yarnflow.core.messages import TaskExecutorLocation
from yarnflow.core.user_code import UserCode

SLOT = ResourceSpec(1, 1024)
LOCATION = TaskExecutorLocation("te-1", "host-a", "te-1:1", "te-1:2")


class Unavailable(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "connection refused"


class Partitions:
    """The jobs whose BLOCKING results the executor holds."""

    def __init__(self) -> None:
        self.jobs: set[str] = set()

    def holds_blocking_partitions(self) -> bool:
        return bool(self.jobs)

    def jobs_with_blocking_partitions(self) -> set[str]:
        return set(self.jobs)

    def release_job(self, job_id: str) -> None:
        self.jobs.discard(job_id)


class Setup:
    def __init__(self, answers=None, **conf: str) -> None:
        overrides = {"heartbeat.interval": "10 s", "heartbeat.timeout": "50 s",
                     "cluster.registration.initial-timeout": "1 s",
                     "cluster.registration.max-timeout": "4 s",
                     "taskmanager.registration.timeout": "60 s", **conf}
        self.main = ManualMainThread()
        self.rm = FakeResourceManagerForExecutor(answers)
        self.jm = FakeJobMasterGateway()
        self.tasks: list[FakeTask] = []
        self.fatal: list[str] = []
        self.partitions = Partitions()

        def new_task(tdd, jm, on_done):
            self.tasks.append(FakeTask(tdd, jm, on_done))
            return self.tasks[-1]
        self.te = TaskExecutor(
            "te-1", TaskExecutorSettings.of(
                Configuration.load(overrides=[f"{k}={v}" for k, v in overrides.items()])),
            TaskSlotTable(2, SLOT), "1c-1024m", self.rm, lambda address, jm_id: self.jm,
            new_task, self.partitions, self.main, self.fatal.append)
        self.main.call(self.te.start, LOCATION)

    def call(self, fn, *args):
        return self.main.call(fn, *args)

    def allocate(self, allocation_id: str = "alloc-1", index: int = 0, rm_id: str = "rm-1") -> int:
        return self.call(self.te.request_slot, SlotAllocation(
            index, "job-1", allocation_id, SLOT, "jm-1", "am:1"), rm_id)


def tdd(allocation_id: str = "alloc-1", attempt_id: str = "attempt-1") -> TaskDeploymentDescriptor:
    return TaskDeploymentDescriptor(TaskInformation("job-1", "jm-1", "am:1", "v", "map", 1, UserCode.received(b"op")),
                                    0, 0, attempt_id, allocation_id)


def test_registration_retries_with_doubling_backoff_until_accepted():
    s = Setup(answers=[Refused("starting"), Unavailable(), Unavailable(), "rm-1"])
    assert len(s.rm.registrations) == 1 and s.te.registration is Registration.REGISTERING
    s.main.advance(0.99)
    assert len(s.rm.registrations) == 1          # the first pause is 1 s
    s.main.advance(0.01)
    assert len(s.rm.registrations) == 2
    s.main.advance(2)                            # then 2 s
    assert len(s.rm.registrations) == 3
    s.main.advance(4)                            # then 4 s, the maximum
    assert len(s.rm.registrations) == 4
    assert s.te.registration is Registration.REGISTERED
    assert s.te.resource_manager_id == "rm-1"
    assert s.rm.registrations[-1].location == LOCATION
    assert [slot.slot_index for slot in s.rm.registrations[-1].slot_report.slots] == [0, 1]


def test_an_executor_that_cannot_register_within_the_timeout_stops():
    s = Setup(answers=[Unavailable()], **{"taskmanager.registration.timeout": "10 s"})
    s.main.advance(6.9)                          # attempts at 0, 1, 3 and 7 s ...
    assert not s.fatal
    s.main.advance(0.1)                          # ... and the next one would be too late
    assert s.fatal == ["registration timed out"]
    attempts = len(s.rm.registrations)
    s.main.advance(100)
    assert len(s.rm.registrations) == attempts   # no attempt after giving up


def test_heartbeats_carry_the_slot_report_and_a_silent_or_forgetful_rm_means_register_again():
    s = Setup()
    s.main.advance(10)
    assert len(s.rm.heartbeats) == 1 and s.rm.heartbeats[0][0] == "rm-1"
    s.allocate()
    s.main.advance(10)
    assert s.rm.heartbeats[-1][1].slots[0].allocation_id == "alloc-1"

    s.rm.known = False                           # the ResourceManager lost track of us
    s.main.advance(10)
    assert len(s.rm.registrations) == 2 and s.te.registration is Registration.REGISTERED

    s.rm.known, s.rm.silent = True, True         # then it stops answering
    s.main.advance(50)
    assert len(s.rm.registrations) == 2
    s.main.advance(10)                           # silent for more than heartbeat.timeout
    assert len(s.rm.registrations) == 3


def test_a_slot_request_is_fenced_by_the_resource_manager_id_and_offered_to_the_job_master():
    s = Setup()
    with pytest.raises(FencingError):
        s.allocate(rm_id="rm-old")
    assert not s.jm.offers
    version = s.allocate()
    assert version == s.te.slots.version
    assert [o.allocation_id for o in s.jm.offers] == ["alloc-1"]
    assert s.te.slots.by_allocation("alloc-1").state.name == "ACTIVE"
    with pytest.raises(Refused):                 # the slot is taken by another allocation
        s.allocate("alloc-2", index=0)


def test_a_declined_offer_frees_the_slot_and_tells_the_resource_manager():
    s = Setup()
    s.jm.decline = True
    s.allocate()
    assert s.te.slots.by_allocation("alloc-1") is None
    assert s.rm.freed == [(0, "alloc-1")]


def test_tasks_run_in_their_slot_and_stale_job_masters_cannot_cancel_them():
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    assert s.tasks[0].started
    with pytest.raises(Refused):                 # no such slot
        s.call(s.te.submit_task, tdd("alloc-9", "attempt-9"))
    with pytest.raises(FencingError):
        s.call(s.te.cancel_task, "jm-old", "attempt-1")
    assert not s.tasks[0].cancelled
    s.call(s.te.cancel_task, "jm-1", "attempt-1")
    assert s.tasks[0].cancelled
    s.call(s.te.cancel_task, "jm-1", "attempt-1")  # idempotent


def test_freeing_a_busy_slot_cancels_its_task_and_reports_the_slot_once_the_task_ended():
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    with pytest.raises(FencingError):
        s.call(s.te.free_slot, "alloc-1", "done", "jm-old")
    known_free = s.call(s.te.free_slot, "alloc-1", "done", "jm-1")
    assert s.tasks[0].cancelled and not s.rm.freed
    # the JobMaster that frees it hears back only once the ResourceManager knows the slot
    # is free, so a job is not announced ended while its slots still look busy
    assert known_free is not None and not known_free.done()
    s.call(s.tasks[0].finish)
    assert s.rm.freed == [(0, "alloc-1")] and known_free.done()


def test_a_silent_job_master_loses_its_slots():
    s = Setup()
    s.allocate()
    s.jm.silent = True                            # first heartbeat to it at 10 s
    s.main.advance(60)
    assert s.te.slots.by_allocation("alloc-1") is not None
    s.main.advance(10)
    assert s.te.slots.by_allocation("alloc-1") is None
    assert s.rm.freed == [(0, "alloc-1")]
    s.main.advance(100)                           # and it is not heartbeated any more
    heartbeats = s.jm.heartbeats
    s.main.advance(100)
    assert s.jm.heartbeats == heartbeats


def test_the_job_master_of_results_held_here_keeps_hearing_from_the_executor():
    s = Setup()
    s.allocate()
    s.partitions.jobs.add("job-1")              # a finished stage's BLOCKING result
    s.call(s.te.free_slot, "alloc-1", "stage done", "jm-1")
    before = s.jm.heartbeats
    s.main.advance(30)
    assert s.jm.heartbeats == before + 3, "its JobMaster must not presume it dead"
    with pytest.raises(FencingError):              # ReleaseJobPartitions is fenced too
        s.call(s.te.release_job_partitions, "job-1", "jm-old")
    assert s.partitions.jobs == {"job-1"}
    s.call(s.te.release_job_partitions, "job-1", "jm-1")
    s.main.advance(30)
    assert s.jm.heartbeats == before + 3


def test_a_slot_request_from_a_resource_manager_whose_answer_is_on_its_way_is_asked_again():
    s = Setup(answers=[Unavailable(), "rm-1"])
    assert s.te.registration is Registration.REGISTERING
    with pytest.raises(NotRegisteredYet):
        s.allocate()
    s.main.advance(1)
    assert s.te.registration is Registration.REGISTERED
    s.allocate()
    assert [o.allocation_id for o in s.jm.offers] == ["alloc-1"]


def test_a_task_that_ignores_cancellation_stops_its_executor_after_the_timeout():
    s = Setup(**{"task.cancellation.timeout": "30 s"})
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.call(s.te.cancel_task, "jm-1", "attempt-1")
    s.main.advance(29)
    assert not s.fatal
    s.main.advance(1)
    assert s.fatal == ["map (1/1) ignored cancellation"]


def test_a_task_that_stops_when_cancelled_keeps_its_executor():
    s = Setup(**{"task.cancellation.timeout": "30 s"})
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.call(s.te.cancel_task, "jm-1", "attempt-1")
    s.call(s.tasks[0].finish)
    s.main.advance(60)
    assert not s.fatal


def test_shutdown_is_fenced_by_the_resource_manager_id():
    s = Setup()
    with pytest.raises(FencingError):
        s.call(s.te.shutdown_requested, "rm-old", "idle")
    assert not s.fatal
    s.call(s.te.shutdown_requested, "rm-1", "idle")
    assert s.fatal == ["idle"]


def test_renewed_delegation_tokens_are_taken_from_the_current_resource_manager_only(monkeypatch):
    from yarnflow.core.fs.tokens import HadoopToken, ProcessCredentials
    from yarnflow.taskexecutor import taskexecutor as module
    credentials = ProcessCredentials([HadoopToken(b"id", b"old", "HDFS_DELEGATION_TOKEN", "nn:9000")])
    monkeypatch.setattr(module, "CREDENTIALS", credentials)
    s = Setup()
    fresh = HadoopToken(b"id", b"new", "HDFS_DELEGATION_TOKEN", "nn:9000")
    with pytest.raises(FencingError):
        s.call(s.te.update_delegation_tokens, "rm-old", [fresh])
    assert credentials.hdfs_token("nn:9000").password == b"old"
    s.call(s.te.update_delegation_tokens, "rm-1", [fresh])
    assert credentials.hdfs_token("nn:9000").password == b"new"


# --- reconciliation with the JobMaster (issue 14, item 6) ----------------------------------
def finished(attempt_id: str = "attempt-1"):
    from yarnflow.core.messages import TaskExecutionState
    from yarnflow.core.status import ExecutionState
    return TaskExecutionState(attempt_id, ExecutionState.FINISHED)


def test_a_final_report_is_sent_until_acknowledged_and_rides_on_heartbeats_meanwhile():
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.jm.report_answers = [Unavailable()] * 100     # the JobMaster stalls
    s.call(s.tasks[0].finish, finished())
    assert s.te.slots.find_task("attempt-1") is None, "the task left its slot"
    assert s.call(s.te.cancel_task, "jm-1", "attempt-1"), "still known: its report is on its way"
    s.main.advance(9.5)
    assert len(s.jm.reports) == 10, "sent at once and again every second"
    s.main.advance(0.5)                            # the heartbeat at 10 s carries it
    carried = s.jm.heartbeat_attempts[-1]
    assert [(r.attempt_id, r.state.name) for r in carried] == [("attempt-1", "FINISHED")]
    sent = len(s.jm.reports)
    s.main.advance(30)
    assert len(s.jm.reports) == sent, "the acknowledged heartbeat ended the resending"
    assert s.jm.heartbeat_attempts[-1] == []
    assert not s.call(s.te.cancel_task, "jm-1", "attempt-1"), "now it is unknown here"


def test_a_report_sent_again_after_the_job_master_came_back_is_not_sent_twice():
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.jm.report_answers = [Unavailable(), Unavailable()]
    s.call(s.tasks[0].finish, finished())
    s.main.advance(5)
    assert len(s.jm.reports) == 3                  # two failures, then acknowledged


def test_a_refused_report_is_not_sent_again():
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.jm.report_answers = [Refused("attempt-1 is not a current attempt")]
    s.call(s.tasks[0].finish, finished())
    s.main.advance(30)
    assert len(s.jm.reports) == 1


def test_heartbeats_name_the_attempts_running_here():
    from yarnflow.core.status import ExecutionState
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.tasks[0].state = ExecutionState.RUNNING
    s.main.advance(10)
    assert [(r.attempt_id, r.state.name) for r in s.jm.heartbeat_attempts[-1]] == \
        [("attempt-1", "RUNNING")]


def test_reports_to_a_job_master_declared_lost_are_dropped():
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.jm.report_answers = [Unavailable()] * 1000
    s.jm.silent = True
    s.call(s.tasks[0].finish, finished())
    s.main.advance(71)               # silent for heartbeat.timeout after the first at 10 s
    sent = len(s.jm.reports)
    s.main.advance(60)
    assert len(s.jm.reports) == sent
    assert not s.call(s.te.cancel_task, "jm-1", "attempt-1")


def test_cancelling_an_attempt_the_executor_never_had_says_so():
    s = Setup()
    s.allocate()
    assert s.call(s.te.cancel_task, "jm-1", "never-deployed") is False


# --- the ApplicationMaster is gone (issue 16, items 5 and 6) --------------------------------
def test_an_executor_whose_resource_manager_is_gone_cancels_its_tasks_and_exits_if_none_answers():
    s = Setup(**{"taskmanager.registration.timeout": "30 s"})
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.partitions.jobs.add("job-1")
    s.rm.silent = True
    s.rm.answers = [Unavailable()]               # and nobody answers a registration
    s.main.advance(50)                           # silent for heartbeat.timeout: not yet
    assert not s.tasks[0].cancelled and s.te.registration is Registration.REGISTERED
    s.main.advance(10)
    assert s.tasks[0].cancelled, "a task left running for a JobMaster that is gone"
    assert s.partitions.jobs == set(), "results kept for a JobMaster that is gone"
    assert s.te.registration is Registration.REGISTERING
    s.tasks[0].finish()                          # the cancelled task leaves its slot
    assert s.te.slots.is_idle()
    s.main.advance(20)
    assert not s.fatal
    s.main.advance(15)                           # taskmanager.registration.timeout passed
    assert s.fatal == ["registration timed out"]


def test_calls_carrying_a_previous_attempts_fencing_tokens_are_refused():
    """Attempt 1's ResourceManager (rm-1) and JobMaster (jm-1) are gone; the executor
    registered with attempt 2's (rm-2, whose JobMaster jm-2 now holds its slot). A
    gateway still carrying attempt 1's tokens is refused, whatever it asks."""
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.rm.silent, s.rm.answers = True, ["rm-2"]
    s.main.advance(60)
    s.tasks[0].finish()
    assert s.te.resource_manager_id == "rm-2" and s.te.registration is Registration.REGISTERED
    s.rm.silent = False

    with pytest.raises(FencingError):
        s.allocate("alloc-stale", rm_id="rm-1")
    with pytest.raises(FencingError):
        s.call(s.te.shutdown_requested, "rm-1", "idle")
    assert not s.fatal and s.te.slots.is_idle()

    s.call(s.te.request_slot, SlotAllocation(0, "job-1", "alloc-2", SLOT, "jm-2", "am2:1"), "rm-2")
    current = TaskDeploymentDescriptor(
        TaskInformation("job-1", "jm-2", "am2:1", "v", "map", 1, UserCode.received(b"op")), 0, 0, "attempt-2",
        "alloc-2")
    s.call(s.te.submit_task, current)
    with pytest.raises(FencingError):
        s.call(s.te.cancel_task, "jm-1", "attempt-2")
    with pytest.raises(FencingError):
        s.call(s.te.free_slot, "alloc-2", "stale", "jm-1")
    with pytest.raises(FencingError):
        s.call(s.te.release_job_partitions, "job-1", "jm-1")
    with pytest.raises(Refused):
        s.call(s.te.submit_task, tdd("alloc-2", "attempt-stale"))      # jm-1's deployment
    running = next(t for t in s.tasks if t.attempt_id == "attempt-2")
    assert not running.cancelled
    assert s.call(s.te.cancel_task, "jm-2", "attempt-2") and running.cancelled


def test_a_deployment_delivered_again_runs_its_attempt_once():
    """A duplicated or retried SubmitTask: two runs of one attempt would share its input
    subpartitions (each reading part) and write its output file twice."""
    s = Setup()
    s.allocate()
    s.call(s.te.submit_task, tdd())
    s.call(s.te.submit_task, tdd())              # while it runs
    assert len(s.tasks) == 1 and s.tasks[0].started
    s.call(s.tasks[0].finish)
    s.call(s.te.submit_task, tdd())              # a late copy, after it ended
    assert len(s.tasks) == 1
