"""Which subpartition each row goes to: forward, broadcast, rebalance, hash of keys, or
the range a sort's range partitioner placed it in."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from yarnflow.core.jobgraph import RANGE_COLUMN, ShipStrategy

# rebalance() slices a batch no finer than this: a smaller slice costs more in per-batch
# overhead than the balance it buys
MIN_SLICE_ROWS = 256


def hash_rows(batch: pa.RecordBatch, keys: tuple[str, ...] | list[str]) -> np.ndarray:
    """A stable 64-bit hash per row of the key columns, equal in every process (so both
    sides of a join agree); integer keys hash by value whatever their width."""
    combined: np.ndarray | None = None
    for key in keys:
        values = _hashed(batch.column(key))
        combined = values if combined is None else combined * np.uint64(1000003) ^ values
    assert combined is not None
    return combined


def _hashed(column: pa.Array) -> np.ndarray:
    """Each row's hash of one key column. Strings and binaries hash each distinct value
    once (Arrow's dictionary encoding) and give its hash to every row holding it: turning
    millions of them into Python objects first cost more than the rest of a hash
    exchange. The hashes are pandas' of the values, whichever way they are reached."""
    import pandas as pd      # only hash-partitioning tasks pay its import (~0.2 s)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or \
            pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        encoded = pc.dictionary_encode(column)
        distinct: np.ndarray = pd.util.hash_array(encoded.dictionary.to_numpy(zero_copy_only=False))
        indices = encoded.indices
        if indices.null_count:        # a null hashes as pandas hashes None
            distinct = np.append(distinct, pd.util.hash_array(np.array([None], dtype=object)))
            indices = pc.fill_null(indices, len(distinct) - 1)
        rows: np.ndarray = distinct[indices.to_numpy()]
        return rows
    if column.null_count and (pa.types.is_integer(column.type) or
                              pa.types.is_boolean(column.type)):
        # with nulls, numpy would see floats (or objects) where a batch without them has
        # integers (or bools): 3 would hash as 3.0 there and reach another subtask than
        # the 3s of other batches. The values hash as they do without nulls; a null as
        # a string key's null does.
        filled = pc.fill_null(column, pa.scalar(False if pa.types.is_boolean(column.type)
                                                else 0, column.type))
        values: np.ndarray = _hashed(filled)
        values[column.is_null().to_numpy(zero_copy_only=False)] = \
            pd.util.hash_array(np.array([None], dtype=object))[0]
        return values
    array = column.to_numpy(zero_copy_only=False)
    if pa.types.is_integer(column.type):
        array = array.astype(np.int64)
    hashed: np.ndarray = pd.util.hash_array(array)
    return hashed


class Partitioner:
    def __init__(self, ship: ShipStrategy, keys: tuple[str, ...], num_subpartitions: int,
                 start: int = 0) -> None:
        self.ship = ship
        self.keys = keys
        self.n = num_subpartitions
        self._next = start % max(1, num_subpartitions)
        self._dealt = [0] * max(1, num_subpartitions)    # rows sent to each, for rebalance

    def split(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        if self.ship is ShipStrategy.RANGE:
            return self._ranges(batch)
        if self.n == 1:
            return [(0, batch)]
        if self.ship is ShipStrategy.BROADCAST:
            return [(i, batch) for i in range(self.n)]
        if self.ship is ShipStrategy.REBALANCE:
            return self._deal(batch)
        if self.ship is ShipStrategy.FORWARD:
            target = self._next
            self._next = (self._next + 1) % self.n
            return [(target, batch)]
        targets = (hash_rows(batch, self.keys) % np.uint64(self.n)).astype(np.int64)
        return self._to(batch, targets)

    def _ranges(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        index = batch.schema.get_field_index(RANGE_COLUMN)
        if index < 0:
            raise ValueError(f"a RANGE exchange's rows lack {RANGE_COLUMN}: the operator "
                             "before it is not a range partitioner")
        place = batch.column(index).to_numpy(zero_copy_only=False)
        batch = batch.remove_column(index)
        if self.n == 1:
            return [(0, batch)]
        targets = np.clip((place * self.n).astype(np.int64), 0, self.n - 1)
        return self._to(batch, targets)

    def _to(self, batch: pa.RecordBatch, targets: np.ndarray) -> list[tuple[int, pa.RecordBatch]]:
        """Each row to its target subpartition, rows of one target in their order."""
        order = np.argsort(targets, kind="stable")
        counts = np.bincount(targets, minlength=self.n)
        shuffled = batch.take(pa.array(order))
        out: list[tuple[int, pa.RecordBatch]] = []
        offset = 0
        for target, count in enumerate(counts):
            if count:
                out.append((target, shuffled.slice(offset, int(count))))
            offset += int(count)
        return out

    def _deal(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        """rebalance(): equal slices to the subpartitions that got the fewest rows so far,
        so each receives this producer's rows / n, within one slice, however few and
        uneven its batches are (whole batches round-robin gave 5000/10000/5000/0)."""
        rows = batch.num_rows
        pieces = max(1, min(self.n, rows // MIN_SLICE_ROWS))
        # ties go round-robin from this producer's own start, so producers differ
        order = sorted(range(self.n), key=lambda i: (self._dealt[i], (i - self._next) % self.n))
        self._next = (self._next + 1) % self.n
        out: list[tuple[int, pa.RecordBatch]] = []
        offset = 0
        for k, target in enumerate(order[:pieces]):
            size = rows // pieces + (1 if k < rows % pieces else 0)
            if size:
                out.append((target, batch.slice(offset, size)))
                self._dealt[target] += size
                offset += size
        return out
