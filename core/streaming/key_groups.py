"""Key groups: the unit keyed state is kept, snapshotted and later moved in (Flink's
``KeyGroupRangeAssignment``).

A key belongs to one of ``max_parallelism`` key groups for the life of the job; each
subtask of a keyed operator owns one contiguous range of them. Routing a row by its key
group, not by its hash modulo the parallelism, is what lets a restore at another
parallelism hand whole ranges of state to new owners (the next issue's rescaling).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from yarnflow.core.hashing import hash_rows

LOWEST_DEFAULT_MAX_PARALLELISM = 128
UPPER_BOUND_MAX_PARALLELISM = 1 << 15


def default_max_parallelism(parallelism: int) -> int:
    """Flink's default for an operator that sets none: 1.5 × its parallelism rounded up
    to a power of two, at least 128 and at most 32768 (a bound once state exists:
    changing it later discards keyed state)."""
    wanted = parallelism + parallelism // 2
    power = 1 << max(0, (wanted - 1).bit_length())
    return min(max(power, LOWEST_DEFAULT_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


def check_max_parallelism(max_parallelism: int, parallelism: int, where: str) -> None:
    if not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        raise ValueError(f"{where}: pipeline.max-parallelism {max_parallelism} is not within "
                         f"1..{UPPER_BOUND_MAX_PARALLELISM}")
    if parallelism > max_parallelism:
        raise ValueError(f"{where}: parallelism {parallelism} is above pipeline.max-parallelism "
                         f"{max_parallelism}; a keyed operator cannot have more subtasks than "
                         "key groups. Fix: lower the parallelism or raise "
                         "pipeline.max-parallelism (before the job first keeps state)")


@dataclass(frozen=True)
class KeyGroupRange:
    """Key groups ``start`` .. ``stop - 1`` (half-open; empty when ``start == stop``)."""
    start: int
    stop: int

    def __contains__(self, key_group: object) -> bool:
        return isinstance(key_group, int) and self.start <= key_group < self.stop

    def __len__(self) -> int:
        return max(0, self.stop - self.start)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(range(self.start, self.stop))


def key_group_range(max_parallelism: int, parallelism: int, operator_index: int) -> KeyGroupRange:
    """The contiguous key groups subtask ``operator_index`` of ``parallelism`` owns:
    exactly those whose ``operator_index_of`` is that index."""
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    stop = ((operator_index + 1) * max_parallelism - 1) // parallelism + 1
    return KeyGroupRange(start, stop)


def operator_index_of(key_group: np.ndarray | int, max_parallelism: int,
                      parallelism: int) -> np.ndarray | int:
    """Which subtask owns each key group."""
    return key_group * parallelism // max_parallelism


def key_groups_of_hashes(hashes: np.ndarray, max_parallelism: int) -> np.ndarray:
    """Each row's key group from its stable key hash (``core/hashing.py``); the hash is
    mixed once more (a 64-bit finaliser), as Flink murmurs ``hashCode``, so that keys
    whose hashes share low bits still spread over the groups."""
    mixed = hashes ^ (hashes >> np.uint64(33))
    mixed = mixed * np.uint64(0xFF51AFD7ED558CCD)
    mixed = mixed ^ (mixed >> np.uint64(33))
    groups: np.ndarray = (mixed % np.uint64(max_parallelism)).astype(np.int64)
    return groups


def key_groups_of(batch: pa.RecordBatch, keys: tuple[str, ...] | list[str],
                  max_parallelism: int) -> np.ndarray:
    """Each row's key group, the same in every process."""
    return key_groups_of_hashes(hash_rows(batch, keys), max_parallelism)
