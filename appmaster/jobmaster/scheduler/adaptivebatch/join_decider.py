"""An adaptive join's strategy, parallelism and skew splits, from its two inputs'
measured bytes (Spark AQE's broadcast switch and skew join; Flink 2.0's adaptive
broadcast join and skewed join optimization).

Both inputs were hash-partitioned on the keys into the same subpartitions and written
whole. Then:

- **broadcast**: a side allowed to be broadcast that measured within the threshold is
  read whole by every subtask and held as the build side; the other side's
  subpartitions are cut into ranges of about equal bytes, as if it were alone.
- **hash** otherwise: both sides are cut at the same subpartition ranges, so a key's
  rows meet in one subtask; the smaller side is built.

Either way a subpartition far larger than the median (``skewed-factor`` times, and more
than ``skewed-threshold``) is split: its rows on the splittable side are divided among
several subtasks by producer (and one producer's share that alone is too large, by
batch), each of which also reads the other side's matching subpartition whole (in a
broadcast, the whole small side). Every row of the split side
still meets every row it matches, exactly once.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.decider import (
    AutoParallelism, InputBytes, ParallelismDecision, decide, even_ranges)
from yarnflow.core.deployment import ConsumerRead
from yarnflow.core.estimates import format_bytes
from yarnflow.core.jobgraph import AdaptiveJoin


@dataclass(frozen=True)
class SkewSettings:
    """``table.optimizer.skewed-join-optimization.*``."""
    enabled: bool = True
    factor: float = 4.0
    threshold: int = 256 * 2**20


@dataclass(frozen=True)
class JoinDecision(ParallelismDecision):
    build_input: int = -1
    strategy: str = "hash"
    split: int = 0                   # subpartitions split for skew


Consumer = dict[int, ConsumerRead]       # input index -> what one subtask reads of it
# Most subtasks one producer's share of a skewed partition is dealt out to, by batch: a
# share holds a batch per batch its producer emitted, so finer slices would get none.
MAX_SLICES = 16


def decide_join(inputs: list[InputBytes], names: tuple[str, str], configured: int,
                settings: AutoParallelism, join: AdaptiveJoin, skew: SkewSettings
                ) -> ParallelismDecision:
    if any(p is None or len(p) != i.subpartitions for i in inputs for p in i.partitions):
        return decide(inputs, configured, settings)        # nothing measured to switch on
    sides = [_Side(i) for i in inputs]
    totals = [side.total for side in sides]
    small = [i for i in join.buildable
             if join.broadcast_threshold and totals[i] <= join.broadcast_threshold]
    whole: int | None = None
    if small:
        build = min(small, key=lambda i: totals[i])
        whole, hashed = build, [1 - build]
        splittable = hashed
        why = (f"join switched to broadcast: {names[build]} measured "
               f"{format_bytes(totals[build])}, within planner.broadcast-threshold "
               f"({format_bytes(join.broadcast_threshold)}); {names[1 - build]} measured "
               f"{format_bytes(totals[1 - build])}")
        strategy = "broadcast"
    else:
        hashed = [0, 1]
        build = min(join.buildable, key=lambda i: totals[i])
        splittable = list(join.splittable)
        limit = (f", over planner.broadcast-threshold ({format_bytes(join.broadcast_threshold)})"
                 if join.broadcast_threshold else "")
        why = (f"hash join: {names[0]} measured {format_bytes(totals[0])}, {names[1]} "
               f"{format_bytes(totals[1])}{limit}; {names[build]} built")
        strategy = "hash"
    n = sides[hashed[0]].subpartitions
    per_sub = [sum(sides[i].at(j) for i in hashed) for j in range(n)]
    total = sum(per_sub)
    lower = min(settings.min_parallelism, settings.max_parallelism)
    wanted = max(lower, min(settings.max_parallelism, math.ceil(total / settings.avg_data_volume)))
    skewed = _skewed(sides, per_sub, splittable, skew)
    consumers = _search(sides, per_sub, hashed, skewed, wanted)
    if len(consumers) < lower:
        consumers = [{i: ConsumerRead(sides[i].producers, r) for i in hashed}
                     for r in even_ranges(n, lower)]
    for consumer in consumers:
        if whole is not None:
            consumer[whole] = ConsumerRead(sides[whole].producers, range(sides[whole].subpartitions))
    reads = {inputs[i].result_id: tuple(c[i] for c in consumers) for i in (0, 1)}
    split = len({next(iter(c[s].subpartitions)) for c in consumers for s in hashed
                 if len(c[s].partitions) < len(sides[s].producers) or c[s].slices > 1})
    if split:
        why += f"; {split} skewed partition(s) split among several subtasks"
    reason = (f"{why}; {format_bytes(settings.avg_data_volume)} per subtask "
              f"(execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task)")
    return JoinDecision(len(consumers), configured, sum(totals), reads, reason,
                        build_input=build, strategy=strategy, split=split)


class _Side:
    def __init__(self, measured: InputBytes) -> None:
        self.partitions = [p for p in measured.partitions if p is not None]
        self.subpartitions = measured.subpartitions
        self.producers = range(len(self.partitions))
        self._at = [sum(p[j] for p in self.partitions) for j in range(self.subpartitions)]
        self.total = sum(self._at)

    def at(self, j: int) -> int:
        return self._at[j] if j < len(self._at) else 0


def _skewed(sides: list[_Side], per_sub: list[int], splittable: list[int],
            skew: SkewSettings) -> dict[int, int]:
    """Skewed subpartitions -> the side whose rows there are split (the larger one)."""
    if not skew.enabled or not per_sub:
        return {}
    median = statistics.median(per_sub)
    out = {}
    for j, size in enumerate(per_sub):
        if size > skew.threshold and size > skew.factor * median:
            side = max(splittable, key=lambda i: sides[i].at(j))
            if len(sides[side].producers) > 1:
                out[j] = side
    return out


def _search(sides: list[_Side], per_sub: list[int], hashed: list[int],
            skewed: dict[int, int], wanted: int) -> list[Consumer]:
    """The consumers of the smallest byte limit that needs at most ``wanted`` of them
    (their number only falls as the limit grows)."""
    low, high = 1, max(sum(per_sub), 1)
    while low < high:
        limit = (low + high) // 2
        if len(_consumers(sides, per_sub, hashed, skewed, limit)) <= wanted:
            high = limit
        else:
            low = limit + 1
    return _consumers(sides, per_sub, hashed, skewed, low)


def _consumers(sides: list[_Side], per_sub: list[int], hashed: list[int],
               skewed: dict[int, int], limit: int) -> list[Consumer]:
    out: list[Consumer] = []
    start, filled = 0, 0

    def close(stop: int) -> None:
        if stop > start:
            out.append({i: ConsumerRead(sides[i].producers, range(start, stop)) for i in hashed})

    for j, size in enumerate(per_sub):
        if j in skewed:
            close(j)
            out.extend(_split(sides, hashed, j, skewed[j], limit))
            start, filled = j + 1, 0
            continue
        if j > start and filled + size > limit:
            close(j)
            start, filled = j, 0
        filled += size
    close(len(per_sub))
    return out


def _split(sides: list[_Side], hashed: list[int], j: int, side: int, limit: int) -> list[Consumer]:
    """Subpartition ``j`` of ``side`` cut by producer into pieces within ``limit`` (less
    what each piece also reads of the other side there), and one producer's share that
    alone exceeds it dealt out by batch; one subtask each."""
    others = [i for i in hashed if i != side]
    room = max(1, limit - sum(sides[i].at(j) for i in others))
    pieces: list[range] = []
    start, filled = 0, 0
    for k, partition in enumerate(sides[side].partitions):
        if k > start and filled + partition[j] > room:
            pieces.append(range(start, k))
            start, filled = k, 0
        filled += partition[j]
    pieces.append(range(start, len(sides[side].partitions)))
    reads: list[ConsumerRead] = []
    for piece in pieces:
        size = sum(sides[side].partitions[k][j] for k in piece)
        slices = min(MAX_SLICES, math.ceil(size / room)) if len(piece) == 1 else 1
        reads += [ConsumerRead(piece, range(j, j + 1), n, slices) for n in range(max(1, slices))]
    return [{side: read, **{i: ConsumerRead(sides[i].producers, range(j, j + 1)) for i in others}}
            for read in reads]
