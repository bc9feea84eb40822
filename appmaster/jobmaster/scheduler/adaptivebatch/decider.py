"""How many subtasks an adaptive vertex gets, and which subpartitions each reads (Flink's
DefaultVertexParallelismAndInputInfosDecider).

Once every producer of the vertex's inputs has finished, the bytes each wrote to each
subpartition are known. The parallelism is those bytes over
``avg-data-volume-per-task``, within ``min-parallelism`` and ``max-parallelism``; the
subpartitions are then cut into at most that many contiguous ranges of about equal
bytes, the same ranges for every hash or rebalance input, so that the rows of a key
meet in one subtask whichever side they come from. A broadcast input is read whole by
every subtask and decides nothing. Pure functions: the JobMaster's side is
``vertex_initializer.py``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from yarnflow.core.deployment import ConsumerRead
from yarnflow.core.estimates import format_bytes


@dataclass(frozen=True)
class AutoParallelism:
    """``execution.batch.adaptive.auto-parallelism.*``."""
    min_parallelism: int = 1
    max_parallelism: int = 128
    avg_data_volume: int = 16 * 2**20


@dataclass(frozen=True)
class InputBytes:
    """One input of the vertex as its producers measured it: per producer partition,
    the bytes of each subpartition (``None`` for a partition whose producer reported
    none, e.g. restored from an event log written before bytes were counted)."""
    result_id: str
    broadcast: bool
    subpartitions: int
    partitions: tuple[tuple[int, ...] | None, ...]


@dataclass(frozen=True)
class ParallelismDecision:
    parallelism: int
    configured: int
    input_bytes: int | None          # None: some producer reported no bytes
    reads: dict[str, tuple[ConsumerRead, ...]]
    reason: str


def decide(inputs: list[InputBytes], configured: int, settings: AutoParallelism
           ) -> ParallelismDecision:
    hashed = [i for i in inputs if not i.broadcast]
    if not hashed:
        raise ValueError("an adaptive vertex needs a hash or rebalance input")
    subpartitions = hashed[0].subpartitions
    if any(i.subpartitions != subpartitions for i in hashed):
        raise ValueError("the inputs of an adaptive vertex differ in their subpartitions: "
                         f"{[i.subpartitions for i in hashed]}")
    upper = min(settings.max_parallelism, subpartitions)
    lower = min(settings.min_parallelism, upper)
    per_subpartition = [0] * subpartitions
    known = True
    for one in hashed:
        for sizes in one.partitions:
            if sizes is None:
                known = False
                continue
            if len(sizes) != subpartitions:
                known = False
                continue
            for j, size in enumerate(sizes):
                per_subpartition[j] += size
    total = sum(per_subpartition)
    bounds = f"{lower}..{upper}"
    if not known:
        wanted = max(lower, min(upper, configured))
        ranges = even_ranges(subpartitions, wanted)
        reason = (f"some producers reported no bytes: the configured parallelism {configured}, "
                  f"within {bounds}")
        measured: int | None = None
    else:
        wanted = max(lower, min(upper, math.ceil(total / settings.avg_data_volume)))
        ranges = balanced_ranges(per_subpartition, wanted)
        if len(ranges) < lower:
            ranges = even_ranges(subpartitions, lower)
        reason = (f"its inputs measured {format_bytes(total)}, "
                  f"{format_bytes(settings.avg_data_volume)} per subtask "
                  f"(execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task), "
                  f"within {bounds}")
        measured = total
    reads: dict[str, tuple[ConsumerRead, ...]] = {}
    for one in inputs:
        producers = range(len(one.partitions))
        reads[one.result_id] = tuple(
            ConsumerRead(producers, range(0, 1) if one.broadcast else r) for r in ranges)
    return ParallelismDecision(len(ranges), configured, measured, reads, reason)


def balanced_ranges(sizes: list[int], most: int) -> list[range]:
    """At most ``most`` contiguous, non-empty ranges over ``sizes`` whose largest sum is
    as small as it can be (the smallest limit whose greedy cut needs no more ranges:
    the count only falls as the limit grows, so a binary search finds it)."""
    if most >= len(sizes):
        return [range(j, j + 1) for j in range(len(sizes))] if sum(sizes) else \
            even_ranges(len(sizes), min(most, len(sizes)))
    low, high = max(max(sizes), 1), max(sum(sizes), 1)
    while low < high:
        limit = (low + high) // 2
        if len(_greedy(sizes, limit)) <= most:
            high = limit
        else:
            low = limit + 1
    return _greedy(sizes, low)


def _greedy(sizes: list[int], limit: int) -> list[range]:
    out: list[range] = []
    start, filled = 0, 0
    for j, size in enumerate(sizes):
        if j > start and filled + size > limit:
            out.append(range(start, j))
            start, filled = j, 0
        filled += size
    out.append(range(start, len(sizes)))
    return out


def even_ranges(count: int, parts: int) -> list[range]:
    """``parts`` contiguous ranges over ``count`` subpartitions, sizes differing by at most one."""
    parts = max(1, min(parts, count))
    base, extra = divmod(count, parts)
    out, start = [], 0
    for k in range(parts):
        stop = start + base + (1 if k < extra else 0)
        out.append(range(start, stop))
        start = stop
    return out
