"""A chain: operators joined by forward edges that run as one task (seed 003's chained
JobVertex, Flink's ``OperatorChain``).

The head reads the task's inputs as it would alone; every batch it emits is a call
into the next operator's ``process``, whose emits call the one after it, and the
last one's go to the task's output. No queue, no copy, one thread: what Flink's
chaining saves over a task per operator is the hand-over (a partition, a queue and a
thread per edge) and a deployment, state reports and a slot's bookkeeping per
operator. When the head's input ends, each operator after it finishes in turn, so
what one holds back (a sink's open file) reaches the next before that one finishes.

An error names the operator that raised it (``failed_operator``): the task is the
chain's, and a user reads which of their functions failed.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.jobgraph import ChainingStrategy
from yarnflow.core.messages import OperatorCounter
from yarnflow.core.operators.base import BatchProcessor, OneInputOperator, Operator, OperatorContext
from yarnflow.core.tracebacks import UserSources

# Set on an exception by the chain: the name of the operator it came out of first.
FAILED_OPERATOR = "yarnflow_operator"


def failed_operator(err: BaseException) -> str | None:
    """The chained operator ``err`` came out of, if a chain ran it."""
    return getattr(err, FAILED_OPERATOR, None)


class ChainedOperator(Operator):
    """The operators of one chained vertex, head first; each after the head takes its
    input pushed (``OneInputOperator``)."""

    def __init__(self, operators: Sequence[Operator], names: Sequence[str]) -> None:
        if len(operators) < 2 or len(operators) != len(names):
            raise ValueError("a chain has two or more operators, each with its name")
        head, rest = operators[0], operators[1:]
        if head.chaining is ChainingStrategy.NEVER:
            raise ValueError(f"operator '{names[0]}' runs in a task of its own")
        for operator, name in zip(rest, names[1:]):
            if not isinstance(operator, OneInputOperator) or \
                    operator.chaining is not ChainingStrategy.ALWAYS:
                raise ValueError(f"operator '{name}' cannot follow its producer in a chain")
        self.operators = list(operators)
        self.followers: list[OneInputOperator] = [op for op in rest if isinstance(op, OneInputOperator)]
        self.names = list(names)
        self.num_inputs = head.num_inputs
        self.sources = _merged([op.sources for op in operators])

    @property
    def head(self) -> Operator:
        return self.operators[0]

    def with_head(self, head: Operator) -> "ChainedOperator":
        """The same chain with another head: a source's readers, which carry its splits."""
        return ChainedOperator([head, *self.operators[1:]], self.names)

    def bound(self, settings: FileSystemSettings) -> "ChainedOperator":
        return ChainedOperator([op.bound(settings) for op in self.operators], self.names)

    def run(self, ctx: OperatorContext) -> None:
        counting = getattr(ctx, "operator_counters", None)     # a task's context counts
        counters: list[OperatorCounter] = counting(self.names) if counting is not None \
            else [OperatorCounter(name) for name in self.names]
        processors: list[tuple[str, BatchProcessor]] = []
        emit = _counted(ctx.emit, counters[-1], None)
        failed = False
        try:
            # from the tail back, so each operator's emit is the next one's process
            for i in range(len(self.operators) - 1, 0, -1):
                name = self.names[i]
                processor = _attributed(name, self.followers[i - 1].open, _Chained(ctx, name, emit))
                processors.insert(0, (name, processor))
                emit = _counted(_calling(name, processor.process), counters[i - 1], counters[i])
            head = _Chained(ctx, self.names[0], emit, head=counters[0])
            _attributed(self.names[0], self.head.run, head)
            counters[0].finished = True
            for counter, (name, processor) in zip(counters[1:], processors):
                _attributed(name, processor.finish)
                counter.finished = True
        except BaseException:
            failed = True
            raise
        finally:
            closing: list[BaseException] = []
            for name, processor in processors:
                try:
                    _attributed(name, processor.close)
                except Exception as err:  # noqa: BLE001 - every processor closes; the first error counts
                    closing.append(err)
            if closing and not failed:
                raise closing[0]


def _merged(parts: list[UserSources | None]) -> UserSources | None:
    found = [p for p in parts if p is not None]
    if not found:
        return None
    texts: dict[str, str] = {}
    files: dict[tuple[str, int], str] = {}
    for part in found:
        texts.update(part.texts)
        files.update(part.files)
    return UserSources(texts, files)


def _name(err: BaseException, name: str) -> None:
    """The innermost operator names an error; the operators it passed through on its
    way out (the producers that called into it) leave that name."""
    if failed_operator(err) is None:
        try:
            setattr(err, FAILED_OPERATOR, name)
        except (AttributeError, TypeError):      # an exception type without attributes
            pass


def _attributed(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except BaseException as err:
        _name(err, name)
        raise


def _counted(emit: Callable[[Any], None], out: OperatorCounter,
             into: OperatorCounter | None) -> Callable[[Any], None]:
    """``emit``, counting what it hands on as ``out``'s output and ``into``'s input."""
    def counting(data: Any) -> None:
        rows, size = data.num_rows, data.nbytes
        out.records_out += rows
        out.bytes_out += size
        if into is not None:
            into.records_in += rows
            into.bytes_in += size
        emit(data)
    return counting


def _calling(name: str, process: Callable[[pa.RecordBatch], None]) -> Callable[[Any], None]:
    """The emit of the operator before ``name``: its batches (a table's, one by one)
    into ``name``'s processor."""
    def emit(data: Any) -> None:
        for batch in data.to_batches() if isinstance(data, pa.Table) else (data,):
            _attributed(name, process, batch)
    return emit


class _Chained:
    """The context of one operator of a chain: the task's, but for its output, which is
    the next operator's input, and its input, which only the head reads."""

    def __init__(self, task: OperatorContext, name: str, emit: Callable[[Any], None],
                 head: OperatorCounter | None = None) -> None:
        self._task = task
        self._emit = emit
        self._head = head       # the head's counter: it alone reads the task's input
        self.subtask_index = task.subtask_index
        self.parallelism = task.parallelism
        self.vertex_name = name
        self.job_id = task.job_id
        self.attempt_id = task.attempt_id
        self.batch_rows = task.batch_rows
        self.build_input = task.build_input

    def input(self, index: int) -> Iterator[pa.RecordBatch]:
        if self._head is None:
            raise RuntimeError(f"operator '{self.vertex_name}' follows its producer in a chain: "
                               "its input is pushed to it, not read")
        counter = self._head
        for batch in self._task.input(index):
            counter.records_in += batch.num_rows
            counter.bytes_in += batch.nbytes
            yield batch

    def emit(self, data: pa.RecordBatch | pa.Table) -> None:
        self._emit(data)

    def next_split(self) -> Any | None:
        return self._task.next_split()

    def spark(self) -> Any:
        return self._task.spark()

    @property
    def cancelled(self) -> bool:
        return self._task.cancelled
