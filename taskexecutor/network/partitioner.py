"""Which subpartition each row goes to: forward, broadcast, rebalance, or hash of keys."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from yarnflow.core.jobgraph import ShipStrategy


def hash_rows(batch: pa.RecordBatch, keys: tuple[str, ...] | list[str]) -> np.ndarray:
    """A stable 64-bit hash per row of the key columns, equal in every process (so both
    sides of a join agree); integer keys hash by value whatever their width."""
    combined: np.ndarray | None = None
    for key in keys:
        column = batch.column(key)
        array = column.to_numpy(zero_copy_only=False)
        if pa.types.is_integer(column.type) and column.null_count == 0:
            array = array.astype(np.int64)
        import pandas as pd      # only hash-partitioning tasks pay its import (~0.2 s)
        values = pd.util.hash_array(array)
        combined = values if combined is None else combined * np.uint64(1000003) ^ values
    assert combined is not None
    return combined


class Partitioner:
    def __init__(self, ship: ShipStrategy, keys: tuple[str, ...], num_subpartitions: int,
                 start: int = 0) -> None:
        self.ship = ship
        self.keys = keys
        self.n = num_subpartitions
        self._next = start % max(1, num_subpartitions)

    def split(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        if self.n == 1:
            return [(0, batch)]
        if self.ship is ShipStrategy.BROADCAST:
            return [(i, batch) for i in range(self.n)]
        if self.ship is ShipStrategy.REBALANCE or self.ship is ShipStrategy.FORWARD:
            target = self._next
            self._next = (self._next + 1) % self.n
            return [(target, batch)]
        targets = (hash_rows(batch, self.keys) % np.uint64(self.n)).astype(np.int64)
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
