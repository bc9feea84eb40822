"""A user's function per key with state and timers (Flink's ``KeyedProcessFunction``),
for what windows do not cover: deduplication, alerts on a pattern, a timeout per key.

The function is called once per record (Python, like Flink's per-record API; the
built-in windows work on whole batches and are far cheaper). While it runs, the state
it asks for is the current key's: a ``ValueState``, ``ListState`` or ``MapState``
made once in ``open``. It may set event-time timers, which fire when the watermark
passes them, and processing-time timers, which fire on the wall clock; ``on_timer``
then runs with the timer's key current. What it ``collect``s becomes rows of
``schema``, sent on after each batch and each round of timers.

State and timers are snapshotted per key with each key's key group (pickled values in
an Arrow file), so a restore takes the keys of the key groups it owns from every
subtask's snapshot, as the windows' state does.
"""
from __future__ import annotations

import heapq
import json
from typing import Any, Callable, Iterator, Sequence

import cloudpickle
import pyarrow as pa
import pyarrow.compute as pc

from yarnflow.core.operators.base import PlanError, require_columns
from yarnflow.core.streaming.events import MIN_WATERMARK
from yarnflow.core.streaming.key_groups import key_groups_of
from yarnflow.core.streaming.operators import (OperatorRestore, SnapshotResult, StreamContext,
                                               StreamOperator, table_snapshot)
from yarnflow.core.streaming.watermarks import event_times_ms

_GROUP, _STATE = "__yarnflow_key_group", "__yarnflow_state"
Key = tuple[Any, ...]


class KeyedProcessFunction:
    """Subclass it: ``open`` makes the state handles, ``process_element`` is called per
    record (a dict of its columns), ``on_timer`` when a timer fires. ``out.collect(row)``
    emits a row (a dict of the output schema's columns)."""

    def open(self, ctx: "ProcessContext") -> None:
        """Once per subtask, before any record: make the state handles here."""

    def process_element(self, row: dict[str, Any], ctx: "ProcessContext",
                        out: "Collector") -> None:
        """Called per record with its key current and ``ctx.timestamp`` its event time
        (None without watermarks upstream)."""
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: "ProcessContext", out: "Collector") -> None:
        """A timer set for the current key fired (``ctx.time_domain`` says which kind)."""


class Collector:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def collect(self, row: dict[str, Any]) -> None:
        self.rows.append(row)


class _Store:
    """Every key's state: key -> state name -> value (a list for a ListState, a dict for a
    MapState)."""

    def __init__(self) -> None:
        self.by_key: dict[Key, dict[str, Any]] = {}
        self.current: Key = ()

    def get(self, name: str, default: Callable[[], Any]) -> Any:
        states = self.by_key.setdefault(self.current, {})
        if name not in states:
            states[name] = default()
        return states[name]

    def peek(self, name: str) -> Any:
        return self.by_key.get(self.current, {}).get(name)

    def put(self, name: str, value: Any) -> None:
        self.by_key.setdefault(self.current, {})[name] = value

    def drop(self, name: str) -> None:
        states = self.by_key.get(self.current)
        if states is not None:
            states.pop(name, None)
            if not states:
                del self.by_key[self.current]


class ValueState:
    def __init__(self, store: _Store, name: str) -> None:
        self._store, self._name = store, name

    def value(self) -> Any:
        return self._store.peek(self._name)

    def update(self, value: Any) -> None:
        self._store.put(self._name, value)

    def clear(self) -> None:
        self._store.drop(self._name)


class ListState:
    def __init__(self, store: _Store, name: str) -> None:
        self._store, self._name = store, name

    def get(self) -> list[Any]:
        return list(self._store.peek(self._name) or [])

    def add(self, value: Any) -> None:
        self._store.get(self._name, list).append(value)

    def update(self, values: Sequence[Any]) -> None:
        self._store.put(self._name, list(values))

    def clear(self) -> None:
        self._store.drop(self._name)


class MapState:
    def __init__(self, store: _Store, name: str) -> None:
        self._store, self._name = store, name

    def get(self, key: Any, default: Any = None) -> Any:
        return (self._store.peek(self._name) or {}).get(key, default)

    def put(self, key: Any, value: Any) -> None:
        self._store.get(self._name, dict)[key] = value

    def remove(self, key: Any) -> None:
        entries = self._store.peek(self._name)
        if entries is not None:
            entries.pop(key, None)

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list((self._store.peek(self._name) or {}).items()))

    def clear(self) -> None:
        self._store.drop(self._name)


class ProcessContext:
    """What the function sees: the current key, the record's event time, the watermark,
    timers, and its state handles."""
    EVENT_TIME, PROCESSING_TIME = "event-time", "processing-time"

    def __init__(self, operator: "KeyedProcessOperator") -> None:
        self._op = operator
        self.timestamp: int | None = None        # the current record's event time (ms)
        self.time_domain = self.EVENT_TIME        # of the timer firing, in on_timer

    @property
    def current_key(self) -> Key:
        return self._op._store.current

    def current_watermark(self) -> int:
        return self._op._watermark

    def current_processing_time(self) -> float:
        return self._op.ctx.now_ms()

    def register_event_time_timer(self, timestamp: int) -> None:
        self._op._add_timer(self._op._event_timers, int(timestamp))

    def register_processing_time_timer(self, timestamp: float) -> None:
        self._op._add_timer(self._op._processing_timers, int(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._op._event_timers.discard((int(timestamp), self.current_key))

    def delete_processing_time_timer(self, timestamp: float) -> None:
        self._op._processing_timers.discard((int(timestamp), self.current_key))

    def value_state(self, name: str) -> ValueState:
        return ValueState(self._op._store, name)

    def list_state(self, name: str) -> ListState:
        return ListState(self._op._store, name)

    def map_state(self, name: str) -> MapState:
        return MapState(self._op._store, name)


class _Timers:
    """(timestamp, key) timers, each at most once, fired in time order."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, Key]] = []
        self._set: set[tuple[int, Key]] = set()

    def add(self, timer: tuple[int, Key]) -> None:
        if timer not in self._set:
            self._set.add(timer)
            heapq.heappush(self._heap, timer)

    def discard(self, timer: tuple[int, Key]) -> None:
        self._set.discard(timer)      # left in the heap; skipped when it comes up

    def due(self, until: int) -> Iterator[tuple[int, Key]]:
        while self._heap and self._heap[0][0] <= until:
            timer = heapq.heappop(self._heap)
            if timer in self._set:
                self._set.discard(timer)
                yield timer

    def all(self) -> list[tuple[int, Key]]:
        return sorted(self._set)


class KeyedProcessOperator(StreamOperator):
    def __init__(self, keys: Sequence[str], function: KeyedProcessFunction, schema: pa.Schema,
                 time_column: str | None, uid: str = "") -> None:
        if not isinstance(function, KeyedProcessFunction):
            raise PlanError(f"process takes a KeyedProcessFunction, not "
                            f"{type(function).__name__}",
                            "subclass yf.KeyedProcessFunction and pass an instance")
        if not isinstance(schema, pa.Schema):
            raise PlanError("process needs the schema of the rows it collects",
                            "pass schema=pyarrow.schema([...])")
        self.keys = list(keys)
        self.function = function
        self.out_schema = schema
        self.time_column = time_column
        self.uid = uid

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is not None:
            require_columns(inputs[0], [*self.keys, *([self.time_column] if self.time_column
                                                       else [])])
        return self.out_schema

    # --- running ----------------------------------------------------------------------
    def setup(self, ctx: StreamContext, restored: OperatorRestore | None) -> None:
        super().setup(ctx, restored)
        self._store = _Store()
        self._event_timers = _Timers()
        self._processing_timers = _Timers()
        self._watermark = MIN_WATERMARK
        self._context = ProcessContext(self)
        self._out = Collector()
        # the key columns' types, so that a snapshot's key groups are those the keyed
        # exchange routed by (a key made an int64 from an int32 would hash elsewhere)
        self._key_fields: list[pa.Field] | None = None
        if restored is not None:
            if restored.inline:
                self._watermark = int(json.loads(restored.inline)["watermark"])
            owned = pa.array(list(ctx.key_groups), pa.int64())
            for table in restored.read_tables():
                self._key_fields = [table.schema.field(k) for k in self.keys]
                mine = table.filter(pc.is_in(table.column(_GROUP), owned))
                keys = zip(*(mine.column(k).to_pylist() for k in self.keys))
                for key, blob in zip(keys, mine.column(_STATE).to_pylist()):
                    states, event, processing = cloudpickle.loads(blob)
                    if states:
                        self._store.by_key[key] = states
                    for t in event:
                        self._event_timers.add((t, key))
                    for t in processing:
                        self._processing_timers.add((t, key))
        self.function.open(self._context)

    def _add_timer(self, timers: _Timers, timestamp: int) -> None:
        timers.add((timestamp, self._store.current))

    def process(self, batch: pa.RecordBatch) -> None:
        if self._key_fields is None:
            self._key_fields = [batch.schema.field(k) for k in self.keys]
        times = (event_times_ms(batch.column(self.time_column)).tolist()
                 if self.time_column else [None] * batch.num_rows)
        for row, timestamp in zip(batch.to_pylist(), times):
            self._store.current = tuple(row[k] for k in self.keys)
            self._context.timestamp = timestamp
            self.function.process_element(row, self._context, self._out)
        self._flush()

    def _fire(self, timers: _Timers, until: int, domain: str) -> None:
        self._context.time_domain = domain
        for timestamp, key in timers.due(until):
            self._store.current = key
            self._context.timestamp = timestamp
            self.function.on_timer(timestamp, self._context, self._out)
        self._flush()

    def on_watermark(self, watermark: int) -> None:
        self._watermark = max(self._watermark, watermark)
        self._fire(self._event_timers, self._watermark, ProcessContext.EVENT_TIME)

    def on_processing_time(self, now_ms: float) -> None:
        self._fire(self._processing_timers, int(now_ms), ProcessContext.PROCESSING_TIME)

    def _flush(self) -> None:
        if self._out.rows:
            rows, self._out.rows = self._out.rows, []
            self.ctx.emit(pa.Table.from_pylist(rows, schema=self.out_schema))

    def snapshot(self, checkpoint_id: int) -> SnapshotResult:
        inline = json.dumps({"watermark": self._watermark}).encode()
        event: dict[Key, list[int]] = {}
        processing: dict[Key, list[int]] = {}
        for t, key in self._event_timers.all():
            event.setdefault(key, []).append(t)
        for t, key in self._processing_timers.all():
            processing.setdefault(key, []).append(t)
        keys = sorted(set(self._store.by_key) | set(event) | set(processing), key=repr)
        if not keys:
            return SnapshotResult(inline=inline)
        # the values are captured now (pickled), so the function may change them on
        blobs = [cloudpickle.dumps((self._store.by_key.get(key, {}), event.get(key, []),
                                    processing.get(key, []))) for key in keys]
        fields = self._key_fields or [pa.field(k, pa.array([key[i] for key in keys]).type)
                                      for i, k in enumerate(self.keys)]
        key_table = pa.table([pa.array([key[i] for key in keys], f.type)
                              for i, f in enumerate(fields)], schema=pa.schema(fields))
        groups = key_groups_of(key_table.combine_chunks().to_batches()[0], self.keys,
                               self.ctx.max_parallelism)
        table = key_table.append_column(_GROUP, pa.array(groups, pa.int64())).append_column(
            _STATE, pa.array(blobs, pa.binary()))
        return table_snapshot(self.ctx, self.uid, table, inline)
