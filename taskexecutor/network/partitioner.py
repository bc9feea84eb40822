"""Which subpartition each row goes to: forward, broadcast, rebalance, hash of keys, or
the range a sort's range partitioner placed it in."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from yarnflow.core.hashing import hash_rows
from yarnflow.core.jobgraph import RANGE_COLUMN, ShipStrategy
from yarnflow.core.streaming.key_groups import key_groups_of_hashes

# rebalance() slices a batch no finer than this: a smaller slice costs more in per-batch
# overhead than the balance it buys
MIN_SLICE_ROWS = 256


class Partitioner:
    def __init__(self, ship: ShipStrategy, keys: tuple[str, ...], num_subpartitions: int,
                 start: int = 0, key_groups: int = 0) -> None:
        """``key_groups``: a streaming job's HASH exchange routes each row to the
        consumer owning its key group (``core/streaming/key_groups.py``), so keyed state
        can move whole key groups later; 0: hash modulo the consumers."""
        self.key_groups = key_groups
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
        hashes = hash_rows(batch, self.keys)
        if self.key_groups:
            targets = key_groups_of_hashes(hashes, self.key_groups) * self.n // self.key_groups
        else:
            targets = (hashes % np.uint64(self.n)).astype(np.int64)
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
        """Each row to its target subpartition, rows of one target in their order. Each
        target's rows are taken on their own, not sliced from one shuffled copy: a slice
        keeps its whole parent in memory, so a consumer that holds its rows (a sort, a
        join's build side) held every target's (issue 57), at the same copying cost."""
        order = np.argsort(targets, kind="stable")
        counts = np.bincount(targets, minlength=self.n)
        out: list[tuple[int, pa.RecordBatch]] = []
        offset = 0
        for target, count in enumerate(counts):
            if count:
                out.append((target, batch.take(pa.array(order[offset:offset + int(count)]))))
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
