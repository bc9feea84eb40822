"""What a running operator may use: the whole contract between an operator and the task
that runs it, in one place.

An operator reads its inputs, emits its output, asks for its share of the slot's
memory, counts what it did, and reports what the job's details show (a sort's key
range, a collect sink's rows). Every context implements every member: the task's own
(``taskexecutor/task.py``), the one a chain gives each of its operators
(``chain.py``), and the tests' (``tests/unit/fakes.py``'s ``TestingOperatorContext``).
So no operator asks whether its context has something (``getattr``): it has.

Unbounded pipelines (issue 83) add two things to what an operator may use, declared
here so that the contract they extend is this one: a state store a checkpoint
snapshots and a restore fills (Flink's keyed and operator state), and timers on event
and processing time (Flink's ``TimerService``). A bounded job's task has neither, and
says so in one line if an operator asks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Protocol

import pyarrow as pa

from yarnflow.core.ids import ExecutionAttemptID, JobID

if TYPE_CHECKING:
    from yarnflow.core.memory import OperatorMemory
    from yarnflow.core.messages import OperatorCounter


class StateStore(Protocol):
    """An operator's state, by name: what a checkpoint snapshots and a restore brings
    back (issue 83 builds it; keyed by the current key where the operator is keyed)."""

    def get(self, name: str) -> bytes | None: ...
    def put(self, name: str, value: bytes) -> None: ...
    def delete(self, name: str) -> None: ...


class TimerService(Protocol):
    """Timers an operator sets and is called back on (issue 83 builds it)."""

    def current_watermark(self) -> int: ...
    def current_processing_time(self) -> int: ...
    def register_event_time_timer(self, timestamp: int) -> None: ...
    def register_processing_time_timer(self, timestamp: int) -> None: ...


class NoStateInBoundedJobs(RuntimeError):
    """An operator asked a bounded job's task for state or timers."""

    def __init__(self, what: str, vertex: str) -> None:
        super().__init__(f"operator '{vertex}' asked for {what}, which only an unbounded "
                         "job's tasks have (checkpoints are not built yet). Fix: keep what "
                         "the operator needs in the operator for the length of its run")


class OperatorContext(Protocol):
    """What a running task gives its operator."""
    subtask_index: int
    parallelism: int
    vertex_name: str
    job_id: JobID
    attempt_id: ExecutionAttemptID
    batch_rows: int
    # a join's build input as adaptive execution decided it at run time (-1: as planned)
    build_input: int

    def input(self, index: int) -> Iterator[pa.RecordBatch]: ...

    def emit(self, data: pa.RecordBatch | pa.Table) -> None:
        """The output, to every edge the task's vertex feeds."""

    def emit_to(self, data: pa.RecordBatch | pa.Table, keys: frozenset[str]) -> None:
        """Output of a chain's inner operator that leaves the chain by the edges whose
        consumer keys are ``keys`` only (``chain.py``)."""

    def next_split(self) -> Any | None:
        """A source's next input split from the JobMaster; None when there are no more."""

    def spark(self) -> Any:
        """The TaskExecutor's SparkSession."""

    def collect_result(self, data: bytes) -> None:
        """A collect sink's rows (an Arrow IPC stream), sent with the FINISHED report."""

    def key_range(self, first: str, last: str) -> None:
        """A sort's range, its first and last key, shown in the job's details."""

    def memory(self) -> "OperatorMemory":
        """A share of the slot's managed memory for an operator that holds data, and
        where it spills (``core/memory.py``); each call is a new share, released by the
        operator when it ends."""

    def operator_counters(self, names: list[str]) -> "list[OperatorCounter]":
        """One counter per operator of the task's chain, reported with the task's
        metrics."""

    def state(self) -> StateStore:
        """The operator's state (unbounded jobs, issue 83)."""

    def timers(self) -> TimerService:
        """The operator's timers (unbounded jobs, issue 83)."""

    @property
    def cancelled(self) -> bool: ...
