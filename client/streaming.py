"""What a DataSet of an unbounded pipeline adds (issue 83): event time and windows.
Mixed into ``DataSet``; ``Pipeline.read_kafka`` makes the source."""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Sequence

import pyarrow as pa

from yarnflow.client.dataset_settings import DataSetState
from yarnflow.core.jobgraph import InvalidPipelineError, ShipStrategy
from yarnflow.core.operators.base import PlanError
from yarnflow.core.streaming.keyed_process import KeyedProcessFunction, KeyedProcessOperator
from yarnflow.core.streaming.operators import StreamSource
from yarnflow.core.streaming.watermarks import WatermarkStrategy
from yarnflow.core.streaming.window_aggregate import WindowAggregateOperator
from yarnflow.core.streaming.windows import (SessionWindows, SlidingWindows, TumblingWindows,
                                             WindowAssigner)
from yarnflow.core.units import parse_duration
from yarnflow.core.user_code import UserCode

if TYPE_CHECKING:
    from yarnflow.client.pipeline import DataSet


def _ms(value: str | float | int, what: str) -> int:
    try:
        return int(round(parse_duration(value) * 1000))
    except ValueError as err:
        raise ValueError(f"{what}: {err}") from None


def tumbling(size: str | float, offset: str | float = 0) -> TumblingWindows:
    """Windows of ``size`` one after the other (``"1 min"``, ``"10 s"``)."""
    return TumblingWindows(_ms(size, "tumbling size"), _ms(offset, "tumbling offset"))


def sliding(size: str | float, slide: str | float) -> SlidingWindows:
    """Windows of ``size`` starting every ``slide``."""
    return SlidingWindows(_ms(size, "sliding size"), _ms(slide, "sliding slide"))


def session(gap: str | float) -> SessionWindows:
    """A key's records less than ``gap`` apart share a window."""
    return SessionWindows(_ms(gap, "session gap"))


class StreamingOperators(DataSetState):
    """Mixed into ``DataSet``."""

    def _unary(self, operator: object, name: str, **edge: object) -> "DataSet":
        raise NotImplementedError      # DataSet's

    def assign_watermarks(self, column: str, max_out_of_orderness: str | float = "5 s",
                          idleness: str | float = 0) -> "DataSet":
        """Event time from ``column`` (a timestamp, or integer milliseconds): a
        watermark per split of the source (per Kafka partition) that trails the latest
        time seen there by ``max_out_of_orderness``; the source's watermark is their
        minimum, leaving out splits silent for ``idleness`` (0: never left out).
        Called right after the source."""
        strategy = WatermarkStrategy(column, _ms(max_out_of_orderness, "max_out_of_orderness"),
                                     _ms(idleness, "idleness"))
        source = self.vertex.operator.value
        if not isinstance(source, StreamSource):
            raise InvalidPipelineError(self.vertex.name, "assign_watermarks follows a "
                                       "streaming source here (watermarks are per split)",
                                       "call it on what read_kafka (or a watched read) returns")
        marked = copy.copy(source)
        marked.watermarks = strategy
        self.vertex.operator = UserCode.of(marked)
        return self._derived(self.vertex, self._ship, self._keys, self._partition_type)

    def window(self, keys: str | Sequence[str], assigner: WindowAssigner,
               aggregations: Sequence[tuple[str, str]], *, allowed_lateness: str | float = 0,
               name: str = "window", uid: str = "") -> "DataSet":
        """Each key's records per window of event time, aggregated as they come (only
        each window's partial results are kept): ``aggregations`` as ``aggregate``
        takes them, of the decomposable functions (sum, count, min, max, mean, any,
        all, product). The output is the keys, ``window_start``, ``window_end``, then
        ``<column>_<function>`` per aggregation, one row per key and window when the
        watermark passes the window's end. A record later than ``allowed_lateness``
        past its window is dropped and counted."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        strategy = self._watermarks()
        try:
            operator = WindowAggregateOperator(keys, assigner, aggregations, strategy.column,
                                               _ms(allowed_lateness, "allowed_lateness"), uid)
        except PlanError as err:
            raise InvalidPipelineError(name, err.problem, err.fix) from None
        return self._unary(operator, name, ship=ShipStrategy.HASH, keys=tuple(keys))

    def process(self, keys: str | Sequence[str], function: KeyedProcessFunction,
                schema: pa.Schema, *, name: str = "process", uid: str = "") -> "DataSet":
        """Each record through ``function`` (a ``yf.KeyedProcessFunction``) with the
        state of its key (value, list and map state) and timers (event time: fired when
        the watermark passes them; processing time: on the wall clock), Flink's
        ``KeyedProcessFunction``: for what windows do not cover. It is called once per
        record, in Python; what it collects becomes rows of ``schema``. Its state is
        checkpointed per key group, as the windows' is."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        try:
            strategy = self._watermarks()
            time_column: str | None = strategy.column
        except InvalidPipelineError:       # no event time upstream: processing time only
            time_column = None
        try:
            operator = KeyedProcessOperator(keys, function, schema, time_column, uid)
        except PlanError as err:
            raise InvalidPipelineError(name, err.problem, err.fix) from None
        return self._unary(operator, name, ship=ShipStrategy.HASH, keys=tuple(keys))

    def _watermarks(self) -> WatermarkStrategy:
        """The event time of this DataSet's sources (through the operators between):
        every one needs watermarks, on a column of the same name."""
        found: list[WatermarkStrategy] = []
        pending, seen = [self.vertex], set()
        while pending:
            vertex = pending.pop()
            if vertex.id in seen:
                continue
            seen.add(vertex.id)
            operator = vertex.operator.value
            if isinstance(operator, StreamSource):
                if operator.watermarks is None:
                    raise InvalidPipelineError(vertex.name, "a window needs event time, and "
                                               "this source has no watermarks",
                                               "call .assign_watermarks(column, ...) on it")
                found.append(operator.watermarks)
                continue
            pending.extend(e.source for e in self.pipeline._edges if e.target.id == vertex.id)
        if not found:
            raise InvalidPipelineError(self.vertex.name, "a window needs a streaming source "
                                       "with watermarks upstream",
                                       "read with read_kafka(...).assign_watermarks(...)")
        if len({w.column for w in found}) > 1:
            raise InvalidPipelineError(self.vertex.name, "the sources' event times are in "
                                       "columns of different names",
                                       "assign watermarks on the same column in every source")
        return found[0]
