"""The operator contract and the conversions every operator shares."""
from __future__ import annotations

import copy
import difflib
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping, Protocol

import pyarrow as pa

from yarnflow.core.failures import ContractError
from yarnflow.core.jobgraph import ChainingStrategy
from yarnflow.core.ids import ExecutionAttemptID, JobID
from yarnflow.core.tracebacks import UserSources
from yarnflow.core.estimates import UNKNOWN, Estimate
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.operators.context import OperatorContext


class OutputCommitter(Protocol):
    """A sink's output, made visible whole or not at all (Flink's
    ``InitializeOnMaster``/``FinalizeOnMaster``); run by the JobMaster."""

    def check_submittable(self) -> None:
        """On the client: refuse an output that exists or cannot be written."""

    def release_ended(self, ended: Callable[[str], bool]) -> list[str]:
        """On the client: drop the claims of jobs whose YARN application ``ended`` (a
        crashed job's claim need not lapse first); the job ids released."""

    def setup(self, job_id: JobID, lease_timeout: float, owner: str = "") -> None:
        """Before any task writes: claim the output for the job, run by YARN
        application ``owner`` ("" off YARN); refused while another job's claim is
        younger than ``lease_timeout``. Then make the staging the tasks write into."""

    def renew(self, job_id: JobID, owner: str = "") -> float:
        """While the job runs, four times per lease timeout: renew the claim."""

    def commit(self, job_id: JobID, attempts: Mapping[int, ExecutionAttemptID]) -> None:
        """The job finished: each subtask's chosen attempt's files become the output."""

    def abort(self, job_id: JobID) -> None:
        """The job did not finish: staging is discarded."""


class PlanError(ValueError):
    """An operator that cannot run on the inputs it was given (a column its input lacks,
    an aggregation pyarrow does not have), found on the client from the inputs'
    schemas before anything is submitted."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}. Fix: {fix}")
        self.problem = problem
        self.fix = fix


def require_columns(schema: pa.Schema, columns: Iterable[str], what: str = "its input") -> None:
    """Refuse a column ``schema`` lacks, naming the columns it has and the closest one,
    as Spark's analyzer does (``cannot resolve 'x' given input columns``)."""
    for column in columns:
        if column in schema.names:
            continue
        close = difflib.get_close_matches(column, schema.names, n=1)
        raise PlanError(f"{what} has no column '{column}' (it has: {', '.join(schema.names)})",
                        f"did you mean '{close[0]}'?" if close else
                        "name one of the columns it has")


def declared_schema(schema: Any, what: str) -> pa.Schema | None:
    """A user's ``output_schema=``: a pyarrow Schema, or what ``pyarrow.schema`` takes."""
    if schema is None or isinstance(schema, pa.Schema):
        return schema
    try:
        return pa.schema(schema)
    except (TypeError, ValueError, pa.ArrowException) as err:
        raise PlanError(f"the output_schema of {what} is not a schema ({err})",
                        "give a pyarrow.schema([(name, type), ...])") from None


class Operator:
    """Base class; ``num_inputs`` is 0 for sources, 1 for most, 2 for joins. An operator
    heads its chain unless it takes its input pushed (``OneInputOperator``): one that
    reads an input whole, or several, pulls them itself."""
    num_inputs = 1
    chaining = ChainingStrategy.HEAD
    # The user's files its functions come from, set by the client: an executor shows
    # their lines in a failure (yarnflow.core.tracebacks).
    sources: UserSources | None = None

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        """The schema of this operator's output, given its inputs' (None: unknown),
        found on the client; raises PlanError for a column an input lacks. Unknown by
        default: a user function's output is unknown unless it was declared, and
        checking stops there, so no correct pipeline is ever refused."""
        return None

    def planned(self, inputs: list[pa.Schema | None]) -> "Operator":
        """The operator as the plan knows its inputs' columns (the schemas pass): itself,
        or a copy that keeps them for a subtask that gets no rows (an outer join's
        empty side, an aggregate without keys, a collect sink). ``schema`` only
        answers; it keeps nothing."""
        return self

    def run(self, ctx: OperatorContext) -> None:
        raise NotImplementedError

    def check_submittable(self) -> None:
        """On the client, before the job is submitted: refuse in one line what would
        fail at once on the cluster (a Kafka topic that is not there). Nothing by
        default; file outputs are their committers' to check."""

    def deferred_input(self) -> int | None:
        """The input this operator reads only once another one is read to its end (a
        join's probe side); None when it reads its inputs as they come. The planner
        makes such an input's exchange BLOCKING where waiting on it could deadlock
        (``client/planner/joins.py``, ``break_pipelined_cycles``)."""
        return None

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


class BatchProcessor:
    """One run of a ``OneInputOperator``: its input pushed to it, a batch per call, by
    the task that reads it or by the operator before it in a chain."""

    def process(self, batch: pa.RecordBatch) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """Its input ended: emit what it held back."""

    def close(self) -> None:
        """After ``finish``, or instead of it when the run failed: release what it holds."""


class OneInputOperator(Operator):
    """An operator that takes its one input a batch at a time (Flink's
    ``OneInputStreamOperator``), so that a chain can run it in its producer's task:
    each batch handed over as a function call, with no queue and no copy."""
    chaining = ChainingStrategy.ALWAYS

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        raise NotImplementedError

    def run(self, ctx: OperatorContext) -> None:
        processor = self.open(ctx)
        try:
            for batch in ctx.input(0):
                processor.process(batch)
            processor.finish()
        finally:
            processor.close()


class EachBatch(BatchProcessor):
    """A processor that holds nothing between batches: a function per batch."""

    def __init__(self, fn: Callable[[pa.RecordBatch], None]) -> None:
        self._fn = fn

    def process(self, batch: pa.RecordBatch) -> None:
        self._fn(batch)


def to_batches(data: Any, what: str) -> Iterable[pa.RecordBatch]:
    """Batches from what a user function returned (a batch, a table, or None)."""
    if data is None:
        return ()
    if isinstance(data, pa.RecordBatch):
        return (data,)
    if isinstance(data, pa.Table):
        batches: list[pa.RecordBatch] = data.to_batches()
        return batches
    raise ContractError(f"{what} must return a pyarrow RecordBatch or Table, got "
                        f"{type(data).__name__}")


def check_declared(batch: pa.RecordBatch, declared: pa.Schema | None, what: str) -> None:
    """A batch of a function that declared its output schema must have its columns and
    types (nullability aside): the client checked the pipeline against the declaration."""
    if declared is not None and \
            [(f.name, f.type) for f in batch.schema] != [(f.name, f.type) for f in declared]:
        raise ContractError(
            f"{what} returned columns ({_columns(batch.schema)}) other than its "
            f"output_schema ({_columns(declared)})")


def _columns(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def concat(batches: Iterable[pa.RecordBatch]) -> pa.Table | None:
    batches = list(batches)
    if not batches:
        return None
    return pa.Table.from_batches(batches).combine_chunks()
