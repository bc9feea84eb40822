"""The operator contract and the conversions every operator shares."""
from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, Iterable, Iterator, Mapping, Protocol

import pyarrow as pa

from yarnflow.core.ids import ExecutionAttemptID, JobID
from yarnflow.core.estimates import UNKNOWN, Estimate
from yarnflow.core.fs import FileSystemSettings


class OperatorContext(Protocol):
    """What a running task gives its operator."""
    subtask_index: int
    parallelism: int
    vertex_name: str
    job_id: JobID
    attempt_id: ExecutionAttemptID
    batch_rows: int

    def input(self, index: int) -> Iterator[pa.RecordBatch]: ...
    def emit(self, data: pa.RecordBatch | pa.Table) -> None: ...
    def next_split(self) -> Any | None: ...
    def spark(self) -> Any: ...          # the TaskExecutor's SparkSession
    @property
    def cancelled(self) -> bool: ...


class OutputCommitter(Protocol):
    """A sink's output, made visible whole or not at all (Flink's
    ``InitializeOnMaster``/``FinalizeOnMaster``); run by the JobMaster."""

    def check_submittable(self) -> None:
        """On the client: refuse an output that exists or cannot be written."""

    def setup(self, job_id: JobID) -> None:
        """Before any task writes: the staging the tasks write into."""

    def commit(self, job_id: JobID, attempts: Mapping[int, ExecutionAttemptID]) -> None:
        """The job finished: each subtask's chosen attempt's files become the output."""

    def abort(self, job_id: JobID) -> None:
        """The job did not finish: staging is discarded."""


class Operator:
    """Base class; ``num_inputs`` is 0 for sources, 1 for most, 2 for joins."""
    num_inputs = 1

    def run(self, ctx: OperatorContext) -> None:
        raise NotImplementedError

    def bound(self, settings: FileSystemSettings) -> "Operator":
        """A copy of this operator for one JobGraph, its paths resolved against
        ``settings``. Planning sets fields on the copy (a join's build side), never on
        the operator in the user's pipeline."""
        return copy.copy(self)

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """What this operator's output is estimated at, given its inputs' estimates.
        Knowing nothing better, an operator keeps its input's estimate (a map or a
        filter is at most as large): dropping it is what made Flink hash seed 003's join."""
        return replace(inputs[0], origin="as its input") if inputs else UNKNOWN


def to_batches(data: Any, what: str) -> Iterable[pa.RecordBatch]:
    """Batches from what a user function returned (a batch, a table, or None)."""
    if data is None:
        return ()
    if isinstance(data, pa.RecordBatch):
        return (data,)
    if isinstance(data, pa.Table):
        batches: list[pa.RecordBatch] = data.to_batches()
        return batches
    raise TypeError(f"{what} must return a pyarrow RecordBatch or Table, got "
                    f"{type(data).__name__}")


def concat(batches: Iterable[pa.RecordBatch]) -> pa.Table | None:
    batches = list(batches)
    if not batches:
        return None
    return pa.Table.from_batches(batches).combine_chunks()
