"""A chain: operators joined by forward edges that run as one task (seed 003's chained
JobVertex, Flink's ``OperatorChain``).

The head reads the task's inputs as it would alone; every batch it emits is a call
into the ``process`` of each operator chained after it, whose emits call theirs, and
an operator that feeds an edge leaving the chain hands its batches to that edge's
result partition. No queue, no copy, one thread: what Flink's chaining saves over a
task per operator is the hand-over (a partition, a queue and a thread per edge) and a
deployment, state reports and a slot's bookkeeping per operator. When the head's
input ends, each operator after it finishes in turn, producers first, so what one
holds back (a sink's open file) reaches the next before that one finishes.

A cancelled task stops before the next batch enters a chained operator: only an edge
leaving the chain checks on its own, and an operator that holds what it reads (a
chained partial aggregate, a sink) leaves nothing for it to check, so the task would
run to the end of its input (a restart waited for the whole of a source's split).

An error names the operator that raised it (``failed_operator``): the task is the
chain's, and a user reads which of their functions failed.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from yarnflow.core.errors import TaskCancelled
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.jobgraph import ChainingStrategy
from yarnflow.core.memory import OperatorMemory
from yarnflow.core.messages import OperatorCounter
from yarnflow.core.operators.base import BatchProcessor, OneInputOperator, Operator
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.operators.context import StateStore, TimerService
from yarnflow.core.tracebacks import UserSources

# Set on an exception by the chain: the name of the operator it came out of first.
FAILED_OPERATOR = "yarnflow_operator"


def failed_operator(err: BaseException) -> str | None:
    """The chained operator ``err`` came out of, if a chain ran it."""
    return getattr(err, FAILED_OPERATOR, None)


class ChainedOperator(Operator):
    """The operators of one chained vertex, head first, each after its producer in the
    chain (``parents``: its index; a line when omitted); each after the head takes its
    input pushed (``OneInputOperator``). ``routes``: which operator feeds each edge that
    leaves the chain, keyed as the run time keys its results (consumer vertex id and
    input index); when omitted, the last operator feeds them all."""

    def __init__(self, operators: Sequence[Operator], names: Sequence[str],
                 parents: Sequence[int] | None = None,
                 routes: dict[str, int] | None = None) -> None:
        if len(operators) < 2 or len(operators) != len(names):
            raise ValueError("a chain has two or more operators, each with its name")
        parents = list(parents) if parents is not None else list(range(-1, len(operators) - 1))
        if len(parents) != len(operators) or parents[0] != -1 or any(
                not 0 <= p < i for i, p in enumerate(parents) if i):
            raise ValueError(f"a chain's operators come after their producers: {parents}")
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
        self.parents = parents
        self.routes = dict(routes) if routes is not None else None
        self.num_inputs = head.num_inputs
        self.sources = _merged([op.sources for op in operators])

    @property
    def head(self) -> Operator:
        return self.operators[0]

    def check_submittable(self) -> None:
        for operator in self.operators:
            operator.check_submittable()

    def children(self, index: int) -> list[int]:
        return [i for i, parent in enumerate(self.parents) if parent == index]

    def display_name(self, index: int = 0) -> str:
        """Flink's name for the chain from ``index`` on: ``a -> b``, a fork ``a -> (b, c)``."""
        below = [self.display_name(child) for child in self.children(index)]
        if not below:
            return self.names[index]
        return f"{self.names[index]} -> " + (below[0] if len(below) == 1
                                             else f"({', '.join(below)})")

    def with_head(self, head: Operator) -> "ChainedOperator":
        """The same chain with another head: a source's readers, which carry its splits."""
        return ChainedOperator([head, *self.operators[1:]], self.names, self.parents, self.routes)

    def bound(self, settings: FileSystemSettings) -> "ChainedOperator":
        return ChainedOperator([op.bound(settings) for op in self.operators], self.names,
                               self.parents, self.routes)

    def run(self, ctx: OperatorContext) -> None:
        counters = ctx.operator_counters(self.names)
        processors: dict[int, BatchProcessor] = {}
        failed = False
        try:
            # from the last back, so the processors an operator emits into are open
            emits: dict[int, Callable[[Any], None]] = {}
            for i in range(len(self.operators) - 1, -1, -1):
                emits[i] = self._emit(ctx, i, counters, processors)
                if i:
                    processors[i] = _attributed(self.names[i], self.followers[i - 1].open,
                                                _Chained(ctx, self.names[i], emits[i]))
            head = _Chained(ctx, self.names[0], emits[0], head=counters[0])
            _attributed(self.names[0], self.head.run, head)
            counters[0].finished = True
            for i in range(1, len(self.operators)):      # producers first
                _attributed(self.names[i], processors[i].finish)
                counters[i].finished = True
        except BaseException:
            failed = True
            raise
        finally:
            closing: list[BaseException] = []
            for i, processor in sorted(processors.items()):
                try:
                    _attributed(self.names[i], processor.close)
                except Exception as err:  # noqa: BLE001 - every processor closes; the first error counts
                    closing.append(err)
            if closing and not failed:
                raise closing[0]

    def _emit(self, ctx: OperatorContext, index: int, counters: list[OperatorCounter],
              processors: dict[int, BatchProcessor]) -> Callable[[Any], None]:
        """What operator ``index`` emits into: the operators chained after it, and the
        results of the edges it feeds out of the chain."""
        out = counters[index]
        children = [(self.names[c], processors[c].process, counters[c])
                    for c in self.children(index)]
        leaving: Callable[[Any], None] | None = None
        if self.routes is None:
            leaving = ctx.emit if not children else None
        else:
            keys = frozenset(key for key, source in self.routes.items() if source == index)
            if keys:
                leaving = functools.partial(ctx.emit_to, keys=keys)

        def emit(data: Any) -> None:
            rows, size = data.num_rows, data.nbytes
            out.records_out += rows
            out.bytes_out += size
            if children:
                batches = data.to_batches() if isinstance(data, pa.Table) else (data,)
                for name, process, into in children:
                    into.records_in += rows
                    into.bytes_in += size
                    for batch in batches:
                        if ctx.cancelled:      # see the module's docstring: stop here
                            raise TaskCancelled()
                        _attributed(name, process, batch)
            if leaving is not None:
                leaving(data)
        return emit


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

    def collect_result(self, data: bytes) -> None:
        self._task.collect_result(data)

    def key_range(self, first: str, last: str) -> None:
        self._task.key_range(first, last)

    def memory(self) -> OperatorMemory:
        return self._task.memory()

    def emit_to(self, data: pa.RecordBatch | pa.Table, keys: frozenset[str]) -> None:
        self._task.emit_to(data, keys)

    def operator_counters(self, names: list[str]) -> list[OperatorCounter]:
        return self._task.operator_counters(names)

    def state(self) -> StateStore:
        return self._task.state()

    def timers(self) -> TimerService:
        return self._task.timers()

    @property
    def cancelled(self) -> bool:
        return self._task.cancelled
