"""In-memory stand-ins for a JobMaster's peers, behind the gateway interfaces."""
from __future__ import annotations

import heapq
import itertools
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable, Iterator

import pyarrow as pa

from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.appmaster.jobmaster.jobmaster import JobMaster
from yarnflow.appmaster.jobmaster.scheduler.default_scheduler import DefaultScheduler
from yarnflow.appmaster.jobmaster.scheduler.scheduler_ng import SchedulerFactory
from yarnflow.appmaster.jobmaster.slotpool import TaskExecutorLocation
from yarnflow.core.messages import SlotOffer, TaskExecutionState, TaskMetrics
from yarnflow.core.status import ExecutionState
from yarnflow.core.errors import EndpointStopped, MissingSharedParts
from yarnflow.conf import Configuration
from yarnflow.core.clock import ManualClock
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.ids import ExecutionAttemptID, JobID
from yarnflow.core.memory import UNLIMITED, OperatorMemory
from yarnflow.core.messages import OperatorCounter
from yarnflow.core.operators.context import NoStateInBoundedJobs, StateStore, TimerService

from yarnflow.rpc.codec import as_received
from yarnflow.rpc.endpoint import ScheduledTask, schedule_periodic


class ManualMainThread:
    """A component's main thread for unit tests: calls run in the caller's thread, one
    at a time in the order they were made (a call made while another runs waits for
    it, as on the real main thread), and delayed calls run only when ``advance``
    moves the manual clock past them. Nothing in a test using it sleeps."""

    def __init__(self, clock: ManualClock | None = None, name: str = "test-main") -> None:
        self.name = name
        self.clock = clock or ManualClock()
        self._queue: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._running = False
        self._timers: list[tuple[float, int, ScheduledTask, Callable[[], Any]]] = []
        self._counter = itertools.count()
        self.stopped = False

    def in_main_thread(self) -> bool:
        return self._running

    def execute(self, fn: Callable[..., Any], *args: Any) -> "Future[Any]":
        future: Future[Any] = Future()
        if self.stopped:
            future.set_exception(EndpointStopped(f"{self.name} is shut down"))
            return future
        self._queue.append((lambda: fn(*args), future))
        self._drain()
        return future

    def _drain(self) -> None:
        if self._running:
            return
        self._running = True
        try:
            while self._queue:
                fn, future = self._queue.popleft()
                try:
                    future.set_result(fn())
                except Exception as err:  # noqa: BLE001 - kept in the future, as MainThread does
                    future.set_exception(err)
        finally:
            self._running = False

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float | None = 30.0) -> Any:
        if self._running:
            return fn(*args)
        return self.execute(fn, *args).result(timeout=0)

    def schedule(self, delay: float, fn: Callable[..., Any], *args: Any) -> ScheduledTask:
        handle = ScheduledTask()
        heapq.heappush(self._timers, (self.clock.monotonic() + delay, next(self._counter),
                                      handle, lambda: fn(*args)))
        return handle

    def schedule_periodic(self, interval: float, fn: Callable[[], Any]) -> ScheduledTask:
        return schedule_periodic(self, interval, fn)

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` on, running every delayed call that falls due on
        the way at its own time, in order."""
        target = self.clock.monotonic() + seconds
        while self._timers and self._timers[0][0] <= target:
            due, _, handle, fn = heapq.heappop(self._timers)
            self.clock.advance(max(0.0, due - self.clock.monotonic()))
            if not handle.cancelled:
                self.execute(fn)
        self.clock.advance(target - self.clock.monotonic())

    def pending_timers(self) -> int:
        return sum(1 for _, _, handle, _ in self._timers if not handle.cancelled)

    def shutdown(self) -> None:
        self.stopped = True


def done(value: Any = None) -> "Future[Any]":
    future: Future[Any] = Future()
    future.set_result(value)
    return future


class FakeTaskExecutor:
    def __init__(self, resource_id: str, host: str = "host-a") -> None:
        self.location = TaskExecutorLocation(resource_id, host, f"{resource_id}:1",
                                             f"{resource_id}:2")
        self.submitted: list[Any] = []
        self.cancelled: list[str] = []
        self.freed: list[str] = []
        self.has_attempts = True     # what cancel_task answers: the attempt is here
        self.submit_error: BaseException | None = None   # every deployment fails so
        # shared deployment parts held, as a real executor's cache holds them; one that
        # ``forgets_parts`` keeps none beyond the deployment that carries them
        self.parts: set[str] = set()
        self.forgets_parts = False
        self.refused: list[Any] = []

    def submit_task(self, descriptor: Any) -> "Future[Any]":
        if self.submit_error is not None:
            self.submitted.append(descriptor)
            return failed(self.submit_error)
        carried = {p.key for p in descriptor.carried}
        missing = [p.key for p in descriptor.shared_parts() if p.key not in self.parts | carried]
        if not self.forgets_parts:
            self.parts |= carried
        if missing:
            self.refused.append(descriptor)
            return failed(MissingSharedParts(f"this TaskExecutor holds no deployment part {missing[0]}"))
        self.submitted.append(descriptor)
        return done()

    def cancel_task(self, attempt_id: str) -> "Future[bool]":
        self.cancelled.append(attempt_id)
        return done(self.has_attempts)

    def free_slot(self, allocation_id: str, cause: str) -> "Future[Any]":
        self.freed.append(allocation_id)
        return done()

    def release_job_partitions(self, job_id: str) -> "Future[Any]":
        return done()


class FakeResourceManager:
    def __init__(self) -> None:
        self.requests: dict[str, ResourceSpec] = {}
        self.hosts: dict[str, tuple[str, ...]] = {}
        self.exact: dict[str, bool] = {}
        self.wanted: dict[str, int] = {}
        self.disconnected = ""
        self.blocked: list[Any] = []          # the BlockedNodes the JobMaster sent
        self.refuse_blocking = False

    def request_slot(self, allocation_id: str, profile: ResourceSpec,
                     preferred_hosts: tuple[str, ...] = (), exact: bool = False,
                     wanted: int = 0) -> "Future[Any]":
        self.requests[allocation_id] = profile
        self.wanted[allocation_id] = wanted
        self.hosts[allocation_id] = preferred_hosts
        self.exact[allocation_id] = exact
        return done()

    def cancel_slot_request(self, allocation_id: str) -> "Future[Any]":
        self.requests.pop(allocation_id, None)
        return done()

    def notify_blocked_nodes(self, nodes: list[Any]) -> "Future[Any]":
        """Blocks every host asked for, unless ``refuse_blocking``."""
        self.blocked.extend(nodes)
        return done([] if self.refuse_blocking else [n.host for n in nodes])

    def disconnect_job_master(self, reason: str) -> "Future[Any]":
        self.disconnected = reason
        return done()


class TestingScheduler:
    """A SchedulerNG that records what its JobMaster hands it: for testing the JobMaster
    as the shell it is. ``needed`` are the executors the job depends on; ``end`` ends
    the job as the real scheduler does once its subtasks are done."""
    __test__ = False      # a fake, not a test class

    def __init__(self, graph: Any, config: Configuration, main: Any, slot_pool: Any,
                 allocator: Any, outputs: Any, splits: Any, job_master: Any,
                 on_subtask_finished: Callable[[Any], None], on_ended: Callable[[], None],
                 task_slow: Any = None) -> None:
        self.graph = graph
        self._on_ended = on_ended
        self.restarts = 0
        self.exceptions: list[Any] = []
        self.speculations: list[Any] = []
        self.calls: list[tuple[Any, ...]] = []
        self.lost: set[str] = set()
        self.needed: set[str] = set()

    def start(self) -> None:
        self.calls.append(("start",))
        self.graph.transition(JobStatus.RUNNING)

    def fail_before_start(self, cause: str) -> None:
        self.calls.append(("fail_before_start", cause))
        self.graph.failure = cause
        self.end(JobStatus.FAILED)

    def cancel(self) -> None:
        self.calls.append(("cancel",))

    def stop(self) -> "Future[None]":
        return done()

    def update_task_execution_state(self, report: TaskExecutionState) -> bool:
        self.calls.append(("update", report.attempt_id, report.state))
        return True

    def partition_has_data(self, attempt_id: str, result_id: str) -> None:
        self.calls.append(("partition_has_data", attempt_id, result_id))

    def set_checkpoint_hooks(self, hooks: Any) -> None:
        self.calls.append(("checkpoint_hooks",))

    def fail_over(self, cause: str) -> None:
        self.calls.append(("fail_over", cause))

    def executor_lost(self, resource_id: str, reason: str) -> None:
        self.lost.add(resource_id)
        self.calls.append(("executor_lost", resource_id, reason))

    def slot_lost(self, slot: Any, cause: str) -> None:
        self.calls.append(("slot_lost", slot.allocation_id, cause))

    def is_lost(self, resource_id: str) -> bool:
        return resource_id in self.lost

    def depends_on(self, resource_id: str) -> bool:
        return resource_id in self.needed

    def end(self, status: JobStatus) -> None:
        self.graph.transition(status)
        self._on_ended()


class Harness:
    """A real JobMaster wired to fake executors and a fake ResourceManager."""

    def __init__(self, graph: JobGraph, config: Configuration | None = None,
                 main: ManualMainThread | None = None,
                 scheduler_factory: SchedulerFactory = DefaultScheduler) -> None:
        """With a ``main`` (a ManualMainThread), everything runs in the test's thread
        and time moves only by ``main.advance``."""
        self.executors: dict[str, FakeTaskExecutor] = {}
        self.rm = FakeResourceManager()
        self.jm = JobMaster(as_received(graph), config or Configuration.load(), "jm:0",
                            lambda loc, jm_id: self.executors[loc.resource_id], main=main,
                            scheduler_factory=scheduler_factory)
        self.jm.connect_resource_manager(self.rm)

    def executor(self, resource_id: str, host: str = "host-a") -> FakeTaskExecutor:
        return self.executors.setdefault(resource_id, FakeTaskExecutor(resource_id, host))

    def start(self) -> None:
        self.jm.start()

    def call(self, fn: Any, *args: Any) -> Any:
        return self.jm.main.call(fn, *args)

    def offer_pending(self, resource_ids: list[str], host_of: dict[str, str] | None = None) -> None:
        """Answer every pending slot request with a slot on the executors, round-robin."""
        def offer() -> None:
            pending = list(self.rm.requests.items())
            self.rm.requests.clear()
            for i, (allocation_id, profile) in enumerate(pending):
                rid = resource_ids[i % len(resource_ids)]
                te = self.executor(rid, (host_of or {}).get(rid, "host-a"))
                self.jm.offer_slots(te.location, [SlotOffer(allocation_id, i, profile)])
        self.call(offer)

    def offer_free_slots(self, per_executor: dict[str, int], profile: ResourceSpec) -> None:
        """Offer unsolicited slots (as a session cluster's warm executors would)."""
        def offer() -> None:
            for rid, count in per_executor.items():
                te = self.executor(rid)
                self.jm.offer_slots(te.location, [SlotOffer(f"{rid}-slot{i}", i, profile)
                                                  for i in range(count)])
        self.call(offer)

    def report(self, attempt_id: str, state: int) -> None:
        self.call(self.jm.update_task_execution_state,
                  TaskExecutionState(attempt_id, ExecutionState(state)))

    def report_failure(self, attempt_id: str, error: str, upstream: bool = False,
                       non_recoverable: bool = False) -> None:
        self.call(self.jm.update_task_execution_state,
                  TaskExecutionState(attempt_id, ExecutionState.FAILED, error, "", upstream,
                                     non_recoverable=non_recoverable))

    def deployed(self) -> list[Any]:
        return [tdd for te in self.executors.values() for tdd in te.submitted]

    def placement(self) -> dict[str, list[tuple[str, int]]]:
        """allocation id -> [(vertex name, subtask index)] of deployed tasks."""
        out: dict[str, list[tuple[str, int]]] = {}
        for tdd in self.deployed():
            out.setdefault(tdd.allocation_id, []).append((tdd.info.vertex_name, tdd.subtask_index))
        return out

    def close(self) -> None:
        self.jm.shutdown()


RUNNING, FINISHED = ExecutionState.RUNNING, ExecutionState.FINISHED


def failed(err: BaseException) -> "Future[Any]":
    future: Future[Any] = Future()
    future.set_exception(err)
    return future


class FakeResourceManagerForExecutor:
    """The ResourceManager as an executor sees it. Registration answers come from
    ``answers`` in order (an id accepts, an exception fails); heartbeats are
    answered with ``known`` unless ``silent``."""

    def __init__(self, answers: list[Any] | None = None) -> None:
        self.answers = list(answers or ["rm-1"])
        self.registrations: list[Any] = []
        self.heartbeats: list[tuple[str, Any]] = []
        self.freed: list[tuple[int, str]] = []
        self.known = True
        self.silent = False

    def register_task_executor(self, registration: Any) -> "Future[str]":
        self.registrations.append(registration)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return failed(answer) if isinstance(answer, BaseException) else done(answer)

    def heartbeat_from_task_executor(self, resource_manager_id: str, resource_id: str,
                                     report: Any, holds_partitions: bool) -> "Future[bool]":
        self.heartbeats.append((resource_manager_id, report))
        return Future() if self.silent else done(self.known)

    def notify_slot_available(self, resource_manager_id: str, resource_id: str,
                              slot_index: int, allocation_id: str) -> "Future[None]":
        self.freed.append((slot_index, allocation_id))
        return done()


class FakeJobMasterGateway:
    """A JobMaster as executors see it: accepts offers unless ``decline``; answers
    heartbeats unless ``silent``; answers state reports with what ``report_answers``
    holds (an exception fails the call; empty: acknowledged)."""

    def __init__(self) -> None:
        self.offers: list[Any] = []
        self.heartbeats = 0
        self.heartbeat_attempts: list[list[Any]] = []
        self.reports: list[Any] = []
        self.report_answers: list[BaseException] = []
        self.decline = False
        self.silent = False
        self.progress: list[list[Any]] = []     # each live progress report's attempts

    def update_task_execution_state(self, update: Any) -> "Future[None]":
        self.reports.append(update)
        return failed(self.report_answers.pop(0)) if self.report_answers else done()

    def notify_partition_data_available(self, attempt_id: str, result_id: str) -> "Future[None]":
        return done()

    def request_next_input_split(self, vertex_id: str, attempt_id: str,
                                 request: int) -> "Future[Any]":
        return done(None)

    def offer_slots(self, location: Any, offers: list[Any]) -> "Future[list[str]]":
        self.offers.extend(offers)
        return done([] if self.decline else [o.allocation_id for o in offers])

    def report_task_progress(self, resource_id: str, attempts: list[Any]) -> "Future[None]":
        self.progress.append(list(attempts))
        return done()

    def heartbeat_from_task_executor(self, resource_id: str, attempts: list[Any]) -> "Future[None]":
        self.heartbeats += 1
        self.heartbeat_attempts.append(list(attempts))
        return Future() if self.silent else done()


class FakeTask:
    def __init__(self, tdd: Any, job_master: Any, on_done: Callable[[Any], None]) -> None:
        self.attempt_id, self.allocation_id, self.job_id = tdd.attempt_id, tdd.allocation_id, tdd.info.job_id
        self.name = f"{tdd.info.vertex_name} ({tdd.subtask_index + 1}/{tdd.info.parallelism})"
        self.started = self.cancelled = False
        self.state = ExecutionState.DEPLOYING
        self.metrics: TaskMetrics | None = None
        self.job_master = job_master
        self._on_done = on_done

    def start(self) -> None:
        self.started = True

    def cancel(self) -> None:
        self.cancelled = True

    def current_state(self) -> TaskExecutionState:
        return TaskExecutionState(self.attempt_id, self.state, metrics=self.metrics)

    def finish(self, report: TaskExecutionState | None = None) -> None:
        """End, reporting ``report`` first as a real task does (None: report nothing)."""
        if report is not None:
            self.state = report.state
            self.job_master.update_task_execution_state(report)
        self._on_done(self)


class TestingWebMonitorSource:
    """The web monitor's source with jobs, executors and a configuration a test sets."""
    __test__ = False

    def __init__(self) -> None:
        from yarnflow.appmaster.webmonitor.source import ApplicationInfo
        from yarnflow.core.messages import ClusterOverview
        self.info = ApplicationInfo("yarn-per-job", "application_1_0001", 2, 1_700_000_000.0,
                                    "hdfs:///history")
        self.job_details: dict[str, Any] = {}
        self.plans: dict[str, Any] = {}
        self.executor_list: list[Any] = []
        self.overview = ClusterOverview()
        self.blocked: list[Any] = []      # the ResourceManager's BlockedNodes
        self.values: dict[str, str] = {}

    def application(self) -> Any:
        return self.info

    def jobs(self) -> list[Any]:
        return list(self.job_details.values())

    def job(self, job_id: str) -> Any:
        from yarnflow.core.errors import UnknownJob
        if job_id not in self.job_details:
            raise UnknownJob(f"no job {job_id} here")
        return self.job_details[job_id]

    def plan(self, job_id: str) -> Any:
        return self.plans.get(job_id)

    def executors(self) -> list[Any]:
        return list(self.executor_list)

    def cluster(self) -> Any:
        return self.overview

    def blocked_hosts(self) -> list[Any]:
        return list(self.blocked)

    def configuration(self) -> dict[str, str]:
        from yarnflow.appmaster.webmonitor.source import visible_configuration
        return visible_configuration(self.values)


class TestingOperatorContext:
    """A task's whole OperatorContext for an operator run in a test: inputs by index
    (lists of batches), the output in ``out`` (and, per set of edges a chain routes to,
    in ``routed``), a fixed memory budget (unlimited unless ``memory`` is given), the
    counters, key ranges and collected rows a task would report, and no state or timers,
    as a bounded job's task."""
    __test__ = False

    def __init__(self, *inputs: list[pa.RecordBatch], batch_rows: int = 2,
                 build_input: int = -1, memory: OperatorMemory | None = None,
                 splits: list[Any] | None = None, vertex_name: str = "task") -> None:
        self.inputs = inputs
        self.out: list[pa.RecordBatch] = []
        self.routed: dict[frozenset[str], list[Any]] = {}
        self.subtask_index, self.parallelism, self.vertex_name = 0, 1, vertex_name
        self.job_id, self.attempt_id = JobID("j"), ExecutionAttemptID("a")
        self.batch_rows, self.build_input = batch_rows, build_input
        self.budget = memory
        self.counters: list[OperatorCounter] = []
        self.key_ranges: list[tuple[str, str]] = []
        self.collected: bytes | None = None
        self._splits = list(splits or [])
        self.cancelled = False

    def input(self, index: int) -> Iterator[pa.RecordBatch]:
        return iter(self.inputs[index])

    def emit(self, data: pa.RecordBatch | pa.Table) -> None:
        self.out.extend(data.to_batches() if isinstance(data, pa.Table) else [data])

    def emit_to(self, data: pa.RecordBatch | pa.Table, keys: frozenset[str]) -> None:
        self.routed.setdefault(keys, []).append(data)

    def next_split(self) -> Any | None:
        return self._splits.pop(0) if self._splits else None

    def spark(self) -> Any:
        raise RuntimeError("a unit test's task has no SparkSession: run a Spark operator "
                           "in tests/integration")

    def collect_result(self, data: bytes) -> None:
        self.collected = data

    def key_range(self, first: str, last: str) -> None:
        self.key_ranges.append((first, last))

    def memory(self) -> OperatorMemory:
        return self.budget if self.budget is not None else OperatorMemory.fixed(UNLIMITED)

    def operator_counters(self, names: list[str]) -> list[OperatorCounter]:
        self.counters = [OperatorCounter(name) for name in names]
        return self.counters

    def state(self) -> StateStore:
        raise NoStateInBoundedJobs("state", self.vertex_name)

    def timers(self) -> TimerService:
        raise NoStateInBoundedJobs("timers", self.vertex_name)

    def table(self, schema: pa.Schema | None = None) -> pa.Table:
        return pa.Table.from_batches(self.out, schema=schema)


class TestingCheckpointTasks:
    """The running job as a CheckpointCoordinator sees it (``CheckpointTasks``): a plan
    of attempts to trigger and to wait for, set by the test (None: not every task is
    running), and every message the coordinator sent, in order."""
    __test__ = False

    def __init__(self, sources: list[str], others: list[str] | None = None,
                 finished: tuple[Any, ...] = ()) -> None:
        from yarnflow.appmaster.jobmaster.checkpoint.pending import TaskRef
        self.running = True
        self.sources = [ExecutionAttemptID(s) for s in sources]
        every = list(sources) + list(others or [])
        self.refs = {ExecutionAttemptID(a): TaskRef(f"v-{a}", f"vertex-{a}", 0, 1, 128)
                     for a in every}
        self.finished = finished
        self.triggered: list[tuple[str, Any]] = []
        self.completed: list[tuple[str, int]] = []
        self.aborted: list[tuple[str, int]] = []
        self.failures: list[str] = []
        self.terminated: list[Any] = []

    def checkpoint_plan(self) -> Any:
        from yarnflow.appmaster.jobmaster.checkpoint.coordinator import CheckpointPlan
        if not self.running:
            return None
        return CheckpointPlan(tuple(self.sources), dict(self.refs), self.finished)

    def trigger(self, attempt: ExecutionAttemptID, barrier: Any) -> None:
        self.triggered.append((attempt, barrier))

    def notify_complete(self, attempt: ExecutionAttemptID, checkpoint_id: int) -> None:
        self.completed.append((attempt, checkpoint_id))

    def notify_aborted(self, attempt: ExecutionAttemptID, checkpoint_id: int) -> None:
        self.aborted.append((attempt, checkpoint_id))

    def fail_job(self, reason: str) -> None:
        self.failures.append(reason)

    def terminate(self, checkpoint: Any) -> None:
        self.terminated.append(checkpoint)


class TestingStreamContext:
    """A stream task's context for one operator in a test (``StreamContext``): what it
    emits in ``out``, its counters, a processing time the test sets, and snapshot files
    in ``directory`` (a local path)."""
    __test__ = False

    def __init__(self, directory: Any, subtask_index: int = 0, parallelism: int = 1,
                 max_parallelism: int = 128, job_id: str = "job") -> None:
        from yarnflow.core.streaming.key_groups import key_group_range
        self.subtask_index, self.parallelism = subtask_index, parallelism
        self.max_parallelism, self.job_id = max_parallelism, job_id
        self.vertex_name, self.batch_rows = "operator", 1000
        self.key_groups = key_group_range(max_parallelism, parallelism, subtask_index)
        self.out: list[pa.RecordBatch] = []
        self.counters: dict[str, int] = {}
        self.now = 0.0
        self.watermark = -(1 << 63)
        self.directory = directory

    def emit(self, data: pa.RecordBatch | pa.Table) -> None:
        self.out.extend(data.to_batches() if isinstance(data, pa.Table) else [data])

    def now_ms(self) -> float:
        return self.now

    def current_watermark(self) -> int:
        return self.watermark

    def count(self, name: str, value: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + value

    def snapshot_file(self, name: str) -> Any:
        from yarnflow.core.fs import FileSystemSettings
        from yarnflow.core.fs.opening import open_filesystem
        location = f"file://{self.directory}"
        return open_filesystem(location, FileSystemSettings()), f"{location}/{name}", name

    def table(self) -> pa.Table:
        return pa.Table.from_batches(self.out)
