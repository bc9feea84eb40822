"""Spill files of the operators that hold data (issue 57): runs of rows written as
Arrow IPC streams to the task's spill directory and read back a batch at a time.

Two ways out of memory, as Flink's batch operators have them:

- ``Buckets``: rows cut by a hash of their keys into ``SPILL_FILES_PER_LEVEL`` files (a grace hash
  join's partitions, a spilling aggregate's), each small enough, or cut again, to be
  handled whole;
- ``SpilledRun`` + ``merge_sorted``: sorted runs and their k-way merge (an external
  sort), holding one batch per run.

Files are read with plain reads, never memory-mapped: a mapped file's pages count as
the process's resident memory, which is what a NodeManager measures.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from yarnflow.core.hashing import bucket_of, hash_rows
from yarnflow.core.memory import OperatorMemory

SPILL_FILES_PER_LEVEL = 32   # files a spilling hash operator cuts its rows into, per level
MAX_LEVEL = 4                # cut again at most this often: below, the rows share a key
_BOUND = "__yarnflow_bound"      # marks the bound row in a merge step, never emitted


class SpilledRun:
    """One file of batches of one schema, written once, then read any number of times."""

    def __init__(self, memory: OperatorMemory, what: str, schema: pa.Schema) -> None:
        self.path: Path = memory.new_file(what)
        # nullable: a later batch of the same columns may hold nulls the first did not
        self.schema = pa.schema([f.with_nullable(True) for f in schema], metadata=schema.metadata)
        self.rows = 0
        self.nbytes = 0
        self._memory = memory
        self._sink: pa.OSFile | None = pa.OSFile(str(self.path), "wb")
        self._writer: pa.ipc.RecordBatchStreamWriter | None = pa.ipc.new_stream(self._sink, schema)

    def write(self, data: pa.Table | pa.RecordBatch, rows_per_batch: int) -> None:
        """``rows_per_batch``: the most rows of one batch in the file, and so what a
        reader holds at once (the operator's ``batch_rows``)."""
        if self._writer is None:
            raise RuntimeError(f"spill file {self.path.name} is closed")
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        if not table.schema.equals(self.schema, check_metadata=True):
            # the same columns told apart by nullability or metadata (a join's output
            # of matched and unmatched rows): the stream has one schema
            table = table.cast(self.schema).replace_schema_metadata(self.schema.metadata)
        self._writer.write_table(table, max_chunksize=max(1, rows_per_batch))
        self.rows += table.num_rows

    def close(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        assert self._sink is not None
        self._sink.close()
        self._writer = self._sink = None
        self.nbytes = self.path.stat().st_size
        self._memory.spilled(self.nbytes)

    def read(self) -> Iterator[pa.RecordBatch]:
        self.close()
        with pa.OSFile(str(self.path), "rb") as source:
            yield from pa.ipc.open_stream(source)

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


class Buckets:
    """Rows cut into ``SPILL_FILES_PER_LEVEL`` spill files by their keys' hash at ``level``: rows of
    one key (on either side of a join, with the same keys' types) meet in one bucket."""

    def __init__(self, memory: OperatorMemory, what: str, keys: Sequence[str], level: int,
                 batch_rows: int, schema: pa.Schema | None = None) -> None:
        """``batch_rows``: the most rows of a batch in its files (the operator's)."""
        self._memory = memory
        self.batch_rows = batch_rows
        self._what = what
        self.keys = list(keys)
        self.level = level
        self.schema = schema          # the first rows' (nullable) when not given
        self.runs: list[SpilledRun | None] = [None] * SPILL_FILES_PER_LEVEL

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        if data.num_rows == 0:
            return
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        table = table.combine_chunks()
        if self.schema is None:      # as its runs hold it (see SpilledRun)
            self.schema = pa.schema([f.with_nullable(True) for f in table.schema],
                                    metadata=table.schema.metadata)
        hashes = np.concatenate([hash_rows(b, self.keys) for b in table.to_batches()])
        targets = bucket_of(hashes, self.level, SPILL_FILES_PER_LEVEL)
        order = np.argsort(targets, kind="stable")
        counts = np.bincount(targets, minlength=SPILL_FILES_PER_LEVEL)
        shuffled = table.take(pa.array(order))
        offset = 0
        for bucket, count in enumerate(counts):
            if count:
                run = self.runs[bucket]
                if run is None:
                    run = self.runs[bucket] = SpilledRun(
                        self._memory, f"{self._what}-l{self.level}-b{bucket}", self.schema)
                run.write(shuffled.slice(offset, int(count)), self.batch_rows)
            offset += int(count)

    def close(self) -> None:
        for run in self.runs:
            if run is not None:
                run.close()

    def bucket(self, index: int) -> Iterator[pa.RecordBatch]:
        run = self.runs[index]
        return iter(()) if run is None else run.read()

    def size(self, index: int) -> int:
        run = self.runs[index]
        return 0 if run is None else run.nbytes

    def delete(self, index: int) -> None:
        run = self.runs[index]
        if run is not None:
            run.delete()
            self.runs[index] = None

    def recut(self, index: int) -> "Buckets":
        """Bucket ``index`` cut again by the next level's bits of the hash (it was too
        big to hold); the bucket's own file goes."""
        inner = Buckets(self._memory, self._what, self.keys, self.level + 1, self.batch_rows,
                        self.schema)
        for batch in self.bucket(index):
            inner.write(batch)
        inner.close()
        self.delete(index)
        return inner

    def delete_all(self) -> None:
        for index in range(SPILL_FILES_PER_LEVEL):
            self.delete(index)


def merge_sorted(runs: Sequence[Iterator[pa.RecordBatch]],
                 keys: list[tuple[str, str]]) -> Iterator[pa.Table]:
    """The rows of sorted ``runs`` in one order, a piece at a time, holding about one
    batch per run. Each step's bound is the least of the last keys read from the runs
    not yet read to their end: every row at or before it has been read, so those rows,
    sorted, are the next piece; the run whose last key was the bound reads on.

    A run's rows at or before the bound are a prefix of what it holds (it is sorted),
    found on its key columns alone and sliced off; only the piece is sorted, once, so
    each row is copied once however many runs there are (sorting all held rows at each
    step cost runs x input)."""
    readers = list(runs)
    last: list[pa.Table | None] = [None] * len(readers)
    held: list[pa.Table | None] = [None] * len(readers)
    for i in range(len(readers)):
        _read_next(readers, last, held, i)
    while True:
        live = [i for i, row in enumerate(last) if row is not None]
        if not live:
            break
        ends = pa.concat_tables([last[i] for i in live])
        first = int(pc.sort_indices(ends, sort_keys=keys)[0].as_py())
        bound, reader = ends.slice(first, 1), live[first]
        ready: list[pa.Table] = []
        for i, rows in enumerate(held):
            if rows is None:
                continue
            through = rows.num_rows if i == reader else _rows_through(rows, bound, keys)
            if through:
                ready.append(rows.slice(0, through))
            held[i] = rows.slice(through) if through < rows.num_rows else None
        if ready:
            yield ready[0] if len(ready) == 1 else pa.concat_tables(ready).sort_by(keys)
        _read_next(readers, last, held, reader)
    rest = [rows for rows in held if rows is not None]
    if rest:
        yield pa.concat_tables(rest).sort_by(keys)


def _rows_through(rows: pa.Table, bound: pa.Table, keys: list[tuple[str, str]]) -> int:
    """How many of sorted ``rows`` come at or before ``bound`` in the keys' order."""
    counted = _count_through(rows, bound, keys)
    if counted is not None:
        return counted
    # any keys: the bound row goes last into one stable sort of the keys, which puts
    # it after the rows equal to it; its place is the count
    columns = [column for column, _ in keys]
    marked = pa.concat_tables([
        rows.select(columns).append_column(_BOUND, pa.array(np.zeros(rows.num_rows, np.int8))),
        bound.select(columns).append_column(_BOUND, pa.array(np.ones(1, np.int8)))])
    order = pc.sort_indices(marked, sort_keys=keys).to_numpy()
    return int(np.flatnonzero(order == rows.num_rows)[0])


def _count_through(rows: pa.Table, bound: pa.Table, keys: list[tuple[str, str]]) -> int | None:
    """The count by one comparison, where it agrees with Arrow's order: one key of a
    number, time, string or decimal type and a bound that is neither null nor NaN (nulls
    and NaNs sort last either way, and compare false or null here). None otherwise."""
    if len(keys) != 1:
        return None
    column, order = keys[0]
    kind = rows.schema.field(column).type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_temporal(kind)
            or pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
            or pa.types.is_decimal(kind)):
        return None
    value = bound.column(column)[0]
    if not value.is_valid:
        return None
    if pa.types.is_floating(kind) and value.as_py() != value.as_py():     # NaN
        return None
    compare = pc.less_equal if order == "ascending" else pc.greater_equal
    try:
        return int(pc.sum(compare(rows.column(column), value)).as_py() or 0)
    except pa.ArrowNotImplementedError:
        return None


def _read_next(readers: list[Iterator[pa.RecordBatch]], last: list[pa.Table | None],
               held: list[pa.Table | None], index: int) -> None:
    for batch in readers[index]:
        if batch.num_rows:
            table = pa.Table.from_batches([batch])
            rows = held[index]
            held[index] = table if rows is None else pa.concat_tables([rows, table])
            last[index] = table.slice(table.num_rows - 1, 1)
            return
    last[index] = None
