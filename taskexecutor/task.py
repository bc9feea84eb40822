"""One attempt of one subtask, run in its own thread (Flink's Task).

It builds its result partitions and input gates from the deployment descriptor,
runs the operator, and reports every state change to its JobMaster. A failure is
reported with a one-line summary that names the vertex, the subtask and the
executor, and the full traceback as detail.
"""
from __future__ import annotations

import dataclasses
import enum
import logging
import pickle
import shutil
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import cloudpickle
import pyarrow as pa

from yarnflow.core.ids import ResourceID
from yarnflow.core.clock import SYSTEM_CLOCK
from yarnflow.core.deployment import ResultPartitionDescriptor, TaskDeploymentDescriptor
from yarnflow.core.jobgraph import PartitionType, consumer_key_of
from yarnflow.core.operators.chain import failed_operator
from yarnflow.core.operators.context import NoStateInBoundedJobs, StateStore, TimerService
from yarnflow.core.errors import Refused, TaskCancelled
from yarnflow.core.failures import ContractError, FailureKind, classify
from yarnflow.core.tracebacks import UserSources, format_user_frames, register_sources
from yarnflow.core.fs import FileSystemSettings, open_filesystem
from yarnflow.core.memory import OperatorMemory
from yarnflow.core.messages import AskAgain, OperatorCounter, TaskExecutionState, TaskMetrics
from yarnflow.core.status import ExecutionState
from yarnflow.taskexecutor.job_master_outbox import TaskJobMasterGateway
from yarnflow.taskexecutor.memory_manager import MemoryManager
from yarnflow.taskexecutor.network.data_server import DataClients
from yarnflow.taskexecutor.network.input_gate import InputGate, channels_of, partition_id
from yarnflow.taskexecutor.network.partition import ResultPartition, Subpartition
from yarnflow.taskexecutor.network.partition_store import StoredSubpartition, subpartition_uri
from yarnflow.taskexecutor.network.partition_manager import ResultPartitionManager
from yarnflow.taskexecutor.spark.session import SparkSessionHolder
from yarnflow.taskexecutor.straggler import Stretch

log = logging.getLogger(__name__)

# one operator unpickled at a time in an executor (see Task._load_operator)
_LOADING = threading.Lock()

# between split requests the JobMaster did not answer (it may be stalling); the task
# asks until it gets an answer or is cancelled (its executor cancels it once the
# JobMaster is declared lost, after heartbeat.timeout)
SPLIT_RETRY_PAUSE_S = 1.0


class UpstreamError(RuntimeError):
    """Reading an input failed: its producer failed, was cancelled or vanished. Such a
    failure is a consequence, so the JobMaster prefers any other cause it hears of."""


class TaskState(enum.Enum):
    """The executor's side of an attempt; each reports as the ExecutionState of the
    same name."""
    DEPLOYING = ExecutionState.DEPLOYING
    RUNNING = ExecutionState.RUNNING
    FINISHED = ExecutionState.FINISHED
    CANCELING = ExecutionState.CANCELING
    CANCELED = ExecutionState.CANCELED
    FAILED = ExecutionState.FAILED


_TASK_TRANSITIONS = {
    TaskState.DEPLOYING: {TaskState.RUNNING, TaskState.CANCELING, TaskState.CANCELED,
                          TaskState.FAILED},
    TaskState.RUNNING: {TaskState.FINISHED, TaskState.CANCELING, TaskState.FAILED},
    TaskState.CANCELING: {TaskState.CANCELED, TaskState.FAILED},
    TaskState.FINISHED: set(), TaskState.CANCELED: set(), TaskState.FAILED: set(),
}


@dataclass
class TaskServices:
    """What every task of one TaskExecutor shares."""
    resource_id: ResourceID
    data_address: str       # its data server's: a channel from there is read in memory
    partitions: ResultPartitionManager
    clients: DataClients
    rpc_timeout: float
    partition_timeout: float
    buffers_per_channel: int
    batch_rows: int
    spill_dir: Path
    spark: SparkSessionHolder
    memory: MemoryManager
    filesystem: FileSystemSettings = FileSystemSettings()   # for results on the cluster's
    # restart-strategy.non-recoverable-exceptions: failures no restart heals
    non_recoverable: tuple[str, ...] = ()
    slowdown: float = 1.0     # test only: test.taskmanager.slow-hosts' factor for this host
    failing: bool = False     # test only: this host is in test.taskmanager.failing-hosts


class Task:
    def __init__(self, tdd: TaskDeploymentDescriptor, services: TaskServices,
                 job_master: TaskJobMasterGateway, on_done: Callable[["Task"], None]) -> None:
        self.tdd = tdd
        self.attempt_id = tdd.attempt_id
        self.allocation_id = tdd.allocation_id
        self.job_id = tdd.info.job_id
        self.name = f"{tdd.info.vertex_name} ({tdd.subtask_index + 1}/{tdd.info.parallelism})"
        self._services = services
        self._on_done = on_done
        self._jm = job_master
        self.state = TaskState.DEPLOYING
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._partitions: list[ResultPartition] = []
        inputs = 1 + max((g.input_index for g in self.tdd.inputs), default=-1)
        self.metrics = TaskMetrics(records_in_per_input=(0,) * inputs)
        self._operators: list[OperatorCounter] = []     # a chained task's, by its chain
        self._routed: dict[frozenset[str], list[ResultPartition]] = {}   # emit_to's, by keys
        self._split_requests = 0
        self._split_held = False          # a split was handed out and not yet read through
        self._collected = b""             # a collect sink's rows, sent when FINISHED
        self._sources: UserSources | None = None     # the operator's (once loaded)
        self._stretch = Stretch(services.slowdown, self._cancel.wait)
        self._thread = threading.Thread(target=self._run, name=f"task-{self.name}", daemon=True)

    # --- control ---------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        with self._lock:
            if self.state in (TaskState.DEPLOYING, TaskState.RUNNING):
                self._transition(TaskState.CANCELING)
        self._cancel.set()

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    def current_state(self) -> TaskExecutionState:
        return TaskExecutionState(self.attempt_id, self.state.value, metrics=self._metrics_now())

    def _metrics_now(self) -> TaskMetrics:
        """A copy of the metrics as they are, with a chain's operators' (a report's)."""
        return dataclasses.replace(self.metrics, operators=tuple(
            c.snapshot() for c in self._operators))

    def _transition(self, target: TaskState) -> None:
        if target not in _TASK_TRANSITIONS[self.state]:
            raise RuntimeError(f"task {self.name}: {self.state.name} -> {target.name} "
                               "is not allowed")
        log.info("%s (attempt %s) switched from %s to %s", self.name, self.attempt_id[:8],
                 self.state.name, target.name)
        self.state = target

    # --- the task thread ---------------------------------------------------------------
    def _run(self) -> None:
        started = SYSTEM_CLOCK.monotonic()
        error, detail, upstream, non_recoverable = "", "", False, False
        try:
            operator = self._load_operator()
            if self._services.failing:
                raise RuntimeError("test fault: every task on this host fails "
                                   "(test.taskmanager.failing-hosts)")
            self._partitions = [self._create_partition(p) for p in self.tdd.info.produced]
            for partition in self._partitions:
                if not partition.stored:          # consumers read those from the store
                    self._services.partitions.register(partition)
            with self._lock:
                if self._cancel.is_set():
                    raise TaskCancelled()
                self._transition(TaskState.RUNNING)
            self._report(TaskState.RUNNING)
            try:
                self._invoke(operator)
            finally:     # its operators' spill files, whichever way it ended
                shutil.rmtree(self.spill_directory, ignore_errors=True)
            if self._cancel.is_set():
                raise TaskCancelled()
            # every output ended (an empty one announced) before waiting on any: a
            # consumer is deployed only once each of its inputs is consumable
            # (LAZY_FROM_SOURCES), and a chain's outputs may all feed one consumer
            for partition in self._partitions:
                partition.finish()
            for partition in self._partitions if self._drain_outputs() else ():
                partition.wait_consumed(self.is_cancelled)
            self.metrics.produced_bytes = tuple(tuple(p.subpartition_bytes)
                                                for p in self._partitions)
            final = TaskState.FINISHED
        except TaskCancelled:
            final = TaskState.CANCELED
        except BaseException as err:  # noqa: BLE001 - user code: anything may come out
            if self._cancel.is_set():
                final = TaskState.CANCELED
            else:
                final = TaskState.FAILED
                upstream = isinstance(err, UpstreamError)
                non_recoverable = classify(err, self._services.non_recoverable) \
                    is FailureKind.NON_RECOVERABLE
                operator = failed_operator(err)
                within = f"operator '{operator}' of " if operator else ""
                error = (f"{within}{self.name} failed on TaskExecutor "
                         f"{self._services.resource_id}: {type(err).__name__}: {err}")
                frames = format_user_frames(err, self._sources)
                if frames:
                    error += f"\n{frames}"
                detail = traceback.format_exc()
                log.error("%s\n%s", error, detail)
        self.metrics.duration_s = SYSTEM_CLOCK.monotonic() - started
        with self._lock:
            if self.state is TaskState.DEPLOYING and final is TaskState.CANCELED:
                self._transition(TaskState.CANCELED)
            elif final is TaskState.CANCELED and self.state is TaskState.RUNNING:
                self._transition(TaskState.CANCELING)
                self._transition(final)
            elif self.state is TaskState.CANCELING and final is TaskState.FINISHED:
                self._transition(TaskState.CANCELED)
            else:
                self._transition(final)
        # Report before releasing partitions: a consumer that fails because of the release
        # must not reach the JobMaster before this task's own (root) cause.
        self._report(self.state, error, detail, upstream, non_recoverable)
        for partition in self._partitions:
            if partition.stored:
                partition.release()
            elif self.state is not TaskState.FINISHED or \
                    partition.partition_type is PartitionType.PIPELINED:
                self._services.partitions.release(partition.partition_id)
        self._on_done(self)

    def _invoke(self, operator: Any) -> None:
        """Run the operator to its end (a stream task runs its loop instead)."""
        operator.run(_Context(self))

    def _drain_outputs(self) -> bool:
        """Whether the task waits, once done, until its consumers read its outputs to
        the end (not a stream task stopped with a savepoint: its consumers stop too)."""
        return True

    def trigger_checkpoint(self, barrier: Any) -> None:
        """Only a stream task takes part in checkpoints."""

    def notify_checkpoint(self, checkpoint_id: int, completed: bool) -> None:
        """Only a stream task takes part in checkpoints."""

    def _create_partition(self, desc: ResultPartitionDescriptor) -> ResultPartition:
        pid = partition_id(desc.result_id, self.tdd.subtask_index, self.tdd.attempt_number)
        result_id = desc.result_id

        def first_data() -> None:
            self._jm.notify_partition_data_available(self.attempt_id, result_id)
        stored: list[Subpartition] | None = None
        if desc.store:
            fs = open_filesystem(desc.store, self._services.filesystem)
            fs.mkdirs(desc.store)
            stored = [StoredSubpartition(fs, subpartition_uri(
                desc.store, self.tdd.subtask_index, self.tdd.attempt_number, i))
                for i in range(desc.num_subpartitions)]
        return ResultPartition(
            pid, self.job_id, desc.result_id, desc.partition_type,
            desc.ship, desc.keys, desc.num_subpartitions,
            self.tdd.subtask_index, self._services.buffers_per_channel,
            self._services.spill_dir / self.job_id, first_data, stored, desc.key_groups)

    def _load_operator(self) -> Any:
        """The operator, unpickled, one task at a time: the tasks of an executor start
        together, and unpickling imports the modules it names, which Python's import
        system does not always survive from several threads at once (a ``KeyError`` of
        a half-imported module). A pipeline this executor cannot load (a module the
        client had and the environment here lacks) fails every attempt the same way."""
        try:
            with _LOADING:
                operator = self.tdd.info.operator.load()
            self._sources = getattr(operator, "sources", None)
            if self._sources is not None:
                register_sources(self._sources)
            return operator
        except (ImportError, AttributeError, pickle.UnpicklingError) as err:
            raise ContractError(f"the pipeline's code for {self.tdd.info.vertex_name} cannot be "
                                f"loaded here: {type(err).__name__}: {err}. Fix: install what it "
                                "imports in the environment the job runs in (the client's "
                                "virtual environment, or yarn.ship-environment)") from err

    def _report(self, state: TaskState, error: str = "", detail: str = "",
                upstream: bool = False, non_recoverable: bool = False) -> None:
        update = TaskExecutionState(self.attempt_id, state.value, error, detail, upstream,
                                    self._metrics_now(), non_recoverable,
                                    self._collected if state is TaskState.FINISHED else b"")
        if not state.value.is_terminal:
            self._jm.update_task_execution_state(update)
            return
        try:     # the executor sends it until acknowledged; the wait only orders the end
            self._jm.update_task_execution_state(update).result(self._services.rpc_timeout)
        except Exception as err:  # noqa: BLE001 - not acknowledged yet: sent again
            log.warning("%s of %s not acknowledged yet by its JobMaster (%s): the executor "
                        "keeps sending it", state.name, self.name, type(err).__name__)

    # --- used by the operator through the context --------------------------------------
    @property
    def spill_directory(self) -> Path:
        """Where this attempt's operators spill: in the executor's work directory, which
        on YARN is in the container's local directories."""
        return self._services.spill_dir / self.job_id / f"spill-{self.attempt_id}"

    def memory(self) -> OperatorMemory:
        def spilled(nbytes: int, files: int) -> None:
            self.metrics.spilled_bytes += nbytes
            self.metrics.spill_files += files
        return self._services.memory.register(self.allocation_id, self.spill_directory, spilled)

    def next_split(self) -> Any | None:
        """The next split to read; asking for it means the one before is read."""
        if self._split_held:
            self._split_held = False
            self.metrics.inputs_done += 1
        while True:
            answer = self._ask_for_split()
            if not isinstance(answer, AskAgain):
                if answer is None:
                    return None
                self._split_held = True
                self.metrics.inputs_total += 1
                return cloudpickle.loads(answer)
            # the splits left are other subtasks' local ones: ask again after the pause
            # the JobMaster named (a cancel ends the wait at once)
            if self._cancel.wait(answer.seconds):
                raise TaskCancelled()

    def _ask_for_split(self) -> Any:
        """One numbered request, repeated until answered: a JobMaster that stalls for
        less than heartbeat.timeout must not fail the task, and a repeat gets the same
        answer, so no split is read twice or lost."""
        self._split_requests += 1
        failures = 0
        while True:
            try:
                return self._jm.request_next_input_split(
                    self.tdd.info.vertex_id, self.attempt_id, self._split_requests) \
                    .result(self._services.rpc_timeout)
            except Refused:
                raise
            except Exception as err:  # noqa: BLE001 - counted, and retried
                failures += 1
                if failures == 1:
                    log.warning("%s: the JobMaster did not answer a split request (%s); "
                                "asking again", self.name, type(err).__name__)
            if self._cancel.wait(SPLIT_RETRY_PAUSE_S):
                raise TaskCancelled()

    def input(self, index: int) -> Iterator[pa.RecordBatch]:
        gates = [g for g in self.tdd.inputs if g.input_index == index]
        if not gates:
            raise IndexError(f"{self.name} has no input {index}")
        channels = channels_of(gates[0], self.tdd.subtask_index)
        self.metrics.inputs_total += len(channels)

        def channel_ended() -> None:
            self.metrics.inputs_done += 1
        gate = InputGate(channels, self._services.data_address,
                         self._services.partitions, self._services.clients, self.is_cancelled,
                         self._services.partition_timeout, self._services.filesystem,
                         channel_ended)
        batches = iter(gate)
        while True:
            self._stretch.work_done()
            try:
                batch = next(batches)
            except StopIteration:
                return
            except TaskCancelled:
                raise
            except Exception as err:
                raise UpstreamError(f"reading input {index}: {type(err).__name__}: {err}") from err
            finally:
                self._stretch.resume()
            self.metrics.records_in += batch.num_rows
            self.metrics.bytes_in += batch.nbytes
            per_input = self.metrics.records_in_per_input   # a tuple: reports copy metrics
            self.metrics.records_in_per_input = (
                per_input[:index] + (per_input[index] + batch.num_rows,) + per_input[index + 1:])
            yield batch

    def operator_counters(self, names: list[str]) -> list[OperatorCounter]:
        """The counters a chain keeps its operators' metrics in, reported with the task's."""
        self._operators = [OperatorCounter(name) for name in names]
        return self._operators

    def emit(self, data: pa.RecordBatch | pa.Table,
             partitions: list[ResultPartition] | None = None) -> None:
        batches = data.to_batches() if isinstance(data, pa.Table) else [data]
        for batch in batches:
            self._stretch.work_done()
            if self._cancel.is_set():
                raise TaskCancelled()
            self.metrics.records_out += batch.num_rows
            self.metrics.bytes_out += batch.nbytes
            for partition in self._partitions if partitions is None else partitions:
                partition.emit(batch, self.is_cancelled)
            self._stretch.resume()

    def emit_to(self, data: pa.RecordBatch | pa.Table, keys: frozenset[str]) -> None:
        """``data`` into the results of the edges named by ``keys`` (consumer vertex id
        and input index): a chain's operator that feeds some of its edges, not all."""
        partitions = self._routed.get(keys)
        if partitions is None:
            partitions = [p for p in self._partitions if consumer_key_of(p.result_id) in keys]
            found = {consumer_key_of(p.result_id) for p in partitions}
            if found != keys:       # a plan the run time does not match: never drop rows
                raise RuntimeError(f"task {self.name} produces no result for "
                                   f"{sorted(keys - found)}")
            self._routed[keys] = partitions
        self.emit(data, partitions)


class _Context:
    """The OperatorContext a task hands its operator."""

    def __init__(self, task: Task) -> None:
        self._task = task
        self.subtask_index = task.tdd.subtask_index
        self.parallelism = task.tdd.info.parallelism
        self.vertex_name = task.tdd.info.vertex_name
        self.job_id = task.job_id
        self.attempt_id = task.attempt_id
        self.batch_rows = task.tdd.info.batch_rows or task._services.batch_rows
        self.build_input = task.tdd.info.build_input

    def input(self, index: int) -> Iterator[pa.RecordBatch]:
        return self._task.input(index)

    def emit(self, data: pa.RecordBatch | pa.Table) -> None:
        self._task.emit(data)

    def emit_to(self, data: pa.RecordBatch | pa.Table, keys: frozenset[str]) -> None:
        self._task.emit_to(data, keys)

    def next_split(self) -> Any | None:
        return self._task.next_split()

    def collect_result(self, data: bytes) -> None:
        self._task._collected = data

    def key_range(self, first: str, last: str) -> None:
        self._task.metrics.key_range = (first, last)

    def memory(self) -> OperatorMemory:
        return self._task.memory()

    def operator_counters(self, names: list[str]) -> list[OperatorCounter]:
        return self._task.operator_counters(names)

    def spark(self) -> Any:
        return self._task._services.spark.get()

    def state(self) -> StateStore:
        raise NoStateInBoundedJobs("state", self.vertex_name)

    def timers(self) -> TimerService:
        raise NoStateInBoundedJobs("timers", self.vertex_name)

    @property
    def cancelled(self) -> bool:
        return self._task.is_cancelled()
