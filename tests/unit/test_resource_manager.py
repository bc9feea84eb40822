"""The ResourceManager with in-memory executors, JobMasters and driver, on a manual
clock: registration, slot requests, heartbeat timeout, lost and idle workers."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver, WorkerEvents
from yarnflow.appmaster.resourcemanager.resourcemanager import ResourceManager
from yarnflow.conf import Configuration
from yarnflow.core.errors import FencingError, Refused, UnknownExecutor, UnknownJob
from yarnflow.core.messages import (SlotAllocation, SlotReport, SlotRequest, SlotStatus,
                                    TaskExecutorLocation, TaskExecutorRegistration)
from yarnflow.core.resources import ResourceSpec as R
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.core.fs.tokens import HadoopToken, ProcessCredentials
from tests.unit.fakes import ManualMainThread, done


def run_now(fn: Any) -> "Future[Any]":
    """The token manager's blocking call, made at once in the test's thread."""
    future: Future[Any] = Future()
    future.set_result(fn())
    return future

SLOT = R(1, 1024)
HEARTBEAT_TIMEOUT, TM_TIMEOUT = 50.0, 30.0


class FakeDriver(ResourceDriver):
    def __init__(self) -> None:
        self.requested: list[tuple[str, WorkerSpec]] = []
        self.avoided: list[frozenset[str]] = []
        self.released: list[str] = []
        self.events: WorkerEvents | None = None
        self.refusing = ""          # the cause every start fails with, as YARN's driver says it
        self.refusing_spec_fault = True     # whether that cause is the worker spec's fault

    def start(self, events: WorkerEvents, resource_manager_address: str) -> None:
        self.events = events

    def request_worker(self, spec: WorkerSpec, hosts: tuple[str, ...] = (),
                       avoid: frozenset[str] = frozenset()) -> str:
        resource_id = f"container-{len(self.requested)}"
        self.requested.append((resource_id, spec))
        self.avoided.append(avoid)
        if self.refusing and self.events is not None:
            self.events.on_worker_terminated(resource_id, self.refusing,
                                             self.refusing_spec_fault)
        return resource_id

    def release_worker(self, resource_id: str) -> None:
        self.released.append(resource_id)

    def max_worker_resources(self) -> R:
        return R(8, 16384)

    def stop(self) -> None:
        pass


class FakeTaskExecutorGateway:
    """Answers slot allocations when the test says so."""

    def __init__(self, resource_id: str, fencing: str) -> None:
        self.resource_id = resource_id
        self.fencing = fencing
        self.allocations: list[tuple[SlotAllocation, Future[int]]] = []
        self.shutdown_reasons: list[str] = []
        self.version = 0
        self.tokens: list[list[Any]] = []       # each renewal it took
        self.token_sends: list[Future[None]] = []
        self.answer_tokens = True               # False: the test answers each send itself

    def update_delegation_tokens(self, tokens: list[Any]) -> "Future[None]":
        future: Future[None] = Future()
        self.token_sends.append(future)
        if self.answer_tokens:
            self.tokens.append(list(tokens))
            future.set_result(None)
        return future

    def request_slot(self, allocation: SlotAllocation) -> "Future[int]":
        future: Future[int] = Future()
        self.allocations.append((allocation, future))
        return future

    def accept_all(self) -> None:
        for _, future in self.allocations:
            if not future.done():
                self.version += 1
                future.set_result(self.version)

    def shutdown(self, reason: str) -> "Future[None]":
        self.shutdown_reasons.append(reason)
        return done()

    def submit_task(self, descriptor: Any) -> "Future[Any]":
        raise AssertionError("the ResourceManager never submits tasks")

    cancel_task = free_slot = release_job_partitions = submit_task


class FakeJobMasterGateway:
    def __init__(self) -> None:
        self.disconnected: list[tuple[str, str]] = []
        self.allocation_failures: list[tuple[str, str]] = []

    def disconnect_task_executor(self, resource_id: str, reason: str) -> "Future[None]":
        self.disconnected.append((resource_id, reason))
        return done()

    def notify_allocation_failure(self, allocation_id: str, cause: str) -> "Future[None]":
        self.allocation_failures.append((allocation_id, cause))
        return done()


class Cluster:
    """A ResourceManager and the fakes around it, on one manual main thread."""

    def __init__(self, *overrides: str, token_provider: Any = None, min_workers: int = 0,
                 ladder: Any = None) -> None:
        config = Configuration.load(overrides=[
            f"heartbeat.timeout={HEARTBEAT_TIMEOUT}", "heartbeat.interval=10",
            f"resourcemanager.taskmanager-timeout={TM_TIMEOUT}", *overrides])
        self.main = ManualMainThread()
        if token_provider is not None:
            token_provider.clock = self.main.clock
        self.driver = FakeDriver()
        self.executors: dict[str, FakeTaskExecutorGateway] = {}
        self.job_master = FakeJobMasterGateway()
        self.rm = ResourceManager(config, self.driver, self._te_gateway,
                                  lambda address, jm_id: self.job_master, main=self.main,
                                  min_workers=min_workers, ladder=ladder,
                                  token_provider=token_provider,
                                  credentials=ProcessCredentials([]))
        self.rm.token_manager._run_blocking = run_now
        self.rm.start("rm:0")

    def _te_gateway(self, location: TaskExecutorLocation, rm_id: str) -> FakeTaskExecutorGateway:
        return self.executors.setdefault(location.resource_id,
                                         FakeTaskExecutorGateway(location.resource_id, rm_id))

    def register(self, resource_id: str, allocated: str = "", host: str = "host-a",
                 slot: R = SLOT) -> str:
        report = SlotReport((SlotStatus(0, slot, allocated, "job-1" if allocated else ""),), 0)
        return self.main.call(self.rm.register_task_executor, TaskExecutorRegistration(
            TaskExecutorLocation(resource_id, host, f"{resource_id}:1", f"{resource_id}:2"),
            report, slot, f"1x{slot.label()}"))

    def heartbeat(self, resource_id: str, allocated: str = "", version: int = 0) -> None:
        report = SlotReport((SlotStatus(0, SLOT, allocated, "job-1" if allocated else ""),),
                            version)
        self.main.call(self.rm.heartbeat_from_task_executor, resource_id,
                       self.rm.resource_manager_id, report, False)

    def request(self, allocation_id: str, profile: R = SLOT, jm_id: str = "jm-1") -> None:
        self.main.call(self.rm.request_slot, SlotRequest(allocation_id, "job-1", jm_id,
                                                         "jm:1", profile))


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.main.call(c.rm.register_job_master, "job-1", "jm-1", "jm:1")
    return c


def test_a_slot_request_starts_a_worker_and_the_registered_executor_serves_it(cluster):
    cluster.request("a1")
    assert [rid for rid, _ in cluster.driver.requested] == ["container-0"]
    rm_id = cluster.register("container-0")
    assert rm_id == cluster.rm.resource_manager_id
    te = cluster.executors["container-0"]
    assert te.fencing == rm_id                      # its calls carry this RM's token
    allocation = te.allocations[0][0]
    assert (allocation.allocation_id, allocation.job_master_id, allocation.slot_index) == \
        ("a1", "jm-1", 0)
    te.accept_all()
    assert "a1" not in cluster.rm.slot_manager.requests
    assert cluster.main.call(cluster.rm.overview).workers[0].free_slots == 0


def test_requests_from_an_unknown_or_stale_job_master_are_refused(cluster):
    with pytest.raises(FencingError):
        cluster.request("a1", jm_id="jm-old")
    cluster.main.call(cluster.rm.disconnect_job_master, "job-1", "jm-1")
    with pytest.raises(UnknownJob):
        cluster.request("a2")
    assert cluster.driver.requested == []


def test_a_profile_larger_than_any_container_is_refused_with_the_sizes(cluster):
    with pytest.raises(Refused, match="larger than the largest this cluster gives"):
        cluster.request("a1", profile=R(64, 1024))


def test_a_heartbeat_from_an_unknown_executor_or_with_a_stale_token_is_refused(cluster):
    with pytest.raises(UnknownExecutor):
        cluster.heartbeat("nobody")
    cluster.register("te-1")
    with pytest.raises(FencingError):
        cluster.main.call(cluster.rm.heartbeat_from_task_executor, "te-1", "stale-id",
                          SlotReport(), False)


def test_a_heartbeat_is_answered_while_the_main_thread_is_busy_and_reconciled_after(cluster):
    """Issue 32, item 3: a heartbeat is answered on the gRPC thread, and its slot report
    is reconciled when the main thread is free (a thousand executors' heartbeats waited
    seconds behind a deployment). An unknown executor or a stale token is still told
    at once to register again."""
    cluster.request("a1")
    cluster.register("container-0")
    cluster.executors["container-0"].accept_all()
    registered_at = cluster.rm.executors["container-0"].last_heartbeat
    cluster.main.advance(10)
    report = SlotReport((SlotStatus(0, SLOT, "a1", "job-1"),), 1)
    seen: list[float] = []

    def deploying() -> None:     # the main thread busy with something long
        cluster.rm.receive_heartbeat("container-0", cluster.rm.resource_manager_id, report, False)
        seen.append(cluster.rm.executors["container-0"].last_heartbeat)
        with pytest.raises(UnknownExecutor):
            cluster.rm.receive_heartbeat("nobody", cluster.rm.resource_manager_id, report, False)
        with pytest.raises(FencingError):
            cluster.rm.receive_heartbeat("container-0", "stale-id", report, False)
    cluster.main.call(deploying)
    assert seen == [registered_at], "answered without the main thread: nothing reconciled yet"
    assert cluster.rm.executors["container-0"].last_heartbeat == registered_at + 10


def test_an_executor_silent_past_the_heartbeat_timeout_is_lost_and_its_job_told(cluster):
    cluster.request("a1")
    cluster.register("container-0")
    cluster.executors["container-0"].accept_all()
    cluster.main.advance(HEARTBEAT_TIMEOUT - 5)
    cluster.heartbeat("container-0", allocated="a1", version=1)   # alive: the clock restarts
    cluster.main.advance(HEARTBEAT_TIMEOUT - 1)
    assert "container-0" in cluster.rm.executors
    cluster.main.advance(2)
    assert "container-0" not in cluster.rm.executors
    assert cluster.driver.released == ["container-0"]
    [(resource_id, reason)] = cluster.job_master.disconnected
    assert resource_id == "container-0" and "heartbeat.timeout" in reason
    with pytest.raises(Refused, match="may not register again"):
        cluster.register("container-0")             # a frozen executor waking up later


def test_a_worker_the_driver_reports_dead_is_lost_at_once(cluster):
    cluster.request("a1")
    cluster.register("container-0")
    cluster.executors["container-0"].accept_all()
    cluster.rm.on_worker_terminated("container-0", "exit code 137 (killed)")
    assert "container-0" not in cluster.rm.executors
    assert cluster.job_master.disconnected[0][0] == "container-0"
    assert "exit code 137" in cluster.job_master.disconnected[0][1]


def test_a_lost_executor_with_a_pending_request_gets_it_placed_again(cluster):
    cluster.request("a1")
    cluster.register("container-0")                 # a1 is PENDING on it, unanswered
    cluster.rm.on_worker_terminated("container-0", "node lost")
    assert [rid for rid, _ in cluster.driver.requested] == ["container-0", "container-1"]


def test_a_worker_that_never_registers_is_asked_again_without_counting(cluster):
    cluster.request("a1")
    cluster.main.advance(121)                       # resourcemanager.worker.start-timeout
    assert "container-0" in cluster.driver.released
    assert cluster.rm.slot_manager.requests["a1"].worker != "container-0"
    # the replacement start waits for resourcemanager.start-worker-retry-interval
    assert [rid for rid, _ in cluster.driver.requested] == ["container-0"]
    cluster.main.advance(3)
    assert [rid for rid, _ in cluster.driver.requested] == ["container-0", "container-1"]
    for n in range(1, 8):       # slow, not wrong: never a failed start of the spec
        cluster.main.advance(121 + 3)
        assert cluster.driver.requested[-1][0] == f"container-{n + 1}"
    assert cluster.job_master.allocation_failures == []


def test_a_start_the_driver_fails_as_it_asks_is_retried_with_back_off(cluster):
    """YARN's driver reports an ask Skein refused or did not answer before it returns
    the worker's id: the ResourceManager has counted the worker as starting by the time
    it hears, and retries as after any failed start."""
    cluster.driver.refusing = "asking Skein for a container did not complete within 10 s"
    cluster.request("a1")
    assert "container-0" not in cluster.rm.slot_manager.pending_workers
    assert cluster.rm.slot_manager.requests["a1"].worker != "container-0"
    cluster.driver.refusing = ""
    cluster.main.advance(3)                         # resourcemanager.start-worker-retry-interval
    assert [rid for rid, _ in cluster.driver.requested] == ["container-0", "container-1"]
    assert "container-1" in cluster.rm.slot_manager.pending_workers


def test_a_worker_skein_answered_late_for_is_adopted_and_serves_its_request(cluster):
    """Issue 53: the YARN driver returns a provisional id when Skein does not answer in
    time, and moves the worker to the container the late answer made: the request
    waits on it, nothing else is started, and its registration serves the request."""
    cluster.request("a1")
    (provisional, _), = cluster.driver.requested
    cluster.rm.on_worker_moved(provisional, "te-late_0")
    cluster.main.advance(0)
    assert cluster.rm.slot_manager.requests["a1"].worker == "te-late_0"
    assert list(cluster.rm.slot_manager.pending_workers) == ["te-late_0"]
    cluster.register("te-late_0")
    (allocation, _), = cluster.executors["te-late_0"].allocations
    assert allocation.allocation_id == "a1"
    assert len(cluster.driver.requested) == 1, "no second worker for a late answer"


def test_failed_starts_that_blame_a_host_or_a_late_answer_never_fail_the_job():
    """Issue 53: a host lost while its containers start, or Skein answering late, says
    nothing about the worker spec: the start is asked again, however often, and only
    failures of the spec itself count toward resourcemanager.start-worker-max-failures."""
    cluster = Cluster("resourcemanager.start-worker-max-failures=2")
    cluster.main.call(cluster.rm.register_job_master, "job-1", "jm-1", "jm:1")
    cluster.request("a1")
    for n in range(6):         # three times the limit, each after the plain retry interval
        cluster.rm.on_worker_terminated(f"container-{n}", "YARN container ... on nm2:8042 "
                                        "ended FAILED: Container released on a *lost* node",
                                        spec_fault=False)
        cluster.main.advance(3)
        assert [rid for rid, _ in cluster.driver.requested][-1] == f"container-{n + 1}"
    assert cluster.job_master.allocation_failures == []
    assert cluster.rm.slot_manager.requests["a1"].worker == "container-6"
    for n in (6, 7, 8):        # the spec's own failures still end it after the limit
        cluster.rm.on_worker_terminated(f"container-{n}", "exited at once", spec_fault=True)
        cluster.main.advance(60)
    (allocation_id, cause), = cluster.job_master.allocation_failures
    assert allocation_id == "a1" and "exited at once" in cause \
        and "resourcemanager.start-worker-max-failures" in cause


def test_an_idle_executor_is_stopped_after_the_taskmanager_timeout(cluster):
    cluster.register("te-1")
    cluster.main.advance(TM_TIMEOUT - 1)
    cluster.heartbeat("te-1")
    assert cluster.executors["te-1"].shutdown_reasons == []
    cluster.main.advance(2)
    assert cluster.executors["te-1"].shutdown_reasons == [
        "idle longer than resourcemanager.taskmanager-timeout"]
    assert cluster.driver.released == ["te-1"]


def test_a_registration_heard_twice_keeps_the_worker_and_starts_no_other(cluster):
    """FLIP-6's message 10: the answer to a registration was lost and the executor
    registers again; the ResourceManager knows it by its ResourceID, keeps its slot
    for the request it serves, and starts no worker for that request."""
    cluster.request("a1")
    first = cluster.register("container-0")
    assert cluster.executors["container-0"].allocations[0][0].allocation_id == "a1"
    again = cluster.register("container-0", allocated="a1")
    assert again == first
    assert [rid for rid, _ in cluster.driver.requested] == ["container-0"]
    view = cluster.main.call(cluster.rm.overview)
    assert len(view.workers) == 1 and view.workers[0].free_slots == 0
    assert view.pending_slot_requests <= 1 and view.pending_workers == 0


class RenewingProvider:
    """A keytab's token provider: each token lives 400 s on the manual clock."""

    def __init__(self) -> None:
        self.clock: Any = None
        self.calls = 0

    def obtain(self) -> tuple[HadoopToken, float]:
        self.calls += 1
        return (HadoopToken(b"id", b"pw-%d" % self.calls, "HDFS_DELEGATION_TOKEN", "nn:9000"),
                self.clock.time() + 400.0)


def test_renewed_tokens_reach_every_executor_and_a_lost_send_is_made_again():
    provider = RenewingProvider()
    cluster = Cluster("security.delegation.tokens.renewal.time-ratio=0.5",
                      token_provider=provider)
    assert provider.calls == 1                           # at start
    cluster.register("te-1", allocated="a-1")           # busy: never idle-released
    te1 = cluster.executors["te-1"]
    assert [t[0].password for t in te1.tokens] == [b"pw-1"]   # at its registration
    te1.answer_tokens = False
    for _ in range(20):                                  # half of its 400 s, heartbeating
        cluster.main.advance(10.0)
        cluster.heartbeat("te-1", allocated="a-1")
    assert provider.calls == 2 and len(te1.token_sends) == 2
    te1.token_sends[-1].set_exception(ConnectionError("lost"))
    cluster.heartbeat("te-1", allocated="a-1")          # reconciled on the next heartbeat
    assert len(te1.token_sends) == 3
    cluster.heartbeat("te-1", allocated="a-1")          # not twice while one is on its way
    assert len(te1.token_sends) == 3
    te1.token_sends[-1].set_result(None)
    cluster.heartbeat("te-1", allocated="a-1")
    assert len(te1.token_sends) == 3 and cluster.rm.tokens.holds_current("te-1")
    cluster.register("te-2")
    assert [t[0].password for t in cluster.executors["te-2"].tokens] == [b"pw-2"]


def test_without_renewals_executors_are_sent_nothing():
    cluster = Cluster()
    cluster.register("te-1")
    cluster.heartbeat("te-1")
    assert cluster.executors["te-1"].token_sends == []
