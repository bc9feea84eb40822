"""An operator's share of its slot's managed memory, and where it spills (issue 57).

Seed 003's TaskExecutor hands memory for sorting and hashing out per slot (Flink's
``MemoryManager``) and spills what does not fit to local disk (its ``IOManager``).
Here a slot's managed memory is ``taskmanager.memory.managed.fraction`` of its
profile's memory; the operators that hold data (a hash join's build side, an
aggregate's groups, a sort's rows) share it equally with the others running in the
same slot at the time, so an operator's limit falls when another starts beside it and
rises when one ends: each checks it as it grows and spills past it.

pyarrow's joins, sorts and group_by allocate from the process's default pool and take
no pool of their own, so an operator counts the bytes it holds (their Arrow buffers)
against its limit; the rest of the slot's memory is for the batches in flight and the
copies those calls make.

One policy serves every operator that holds data (``Held``): what it holds is counted
one way, and the points at which it must spill or merge are shares of its limit named
here once (``COPY_SHARE``, ``KEEP_SHARE``, ``READ_SHARE``), so that a sort, a hash
join and an aggregate cannot drift apart in what "too much" means.
"""
from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable, Generic, TypeVar

import pyarrow as pa

UNLIMITED = sys.maxsize

# A step that copies everything an operator holds (sorting a run, building a hash
# join's table, merging an aggregate's groups) starts while the held bytes are at most
# 1/COPY_SHARE of its limit: pyarrow's copy takes about as much again.
COPY_SHARE = 2
# What an aggregate keeps between merges: past 1/KEEP_SHARE of its limit, the next
# merge (due once it holds twice what the last left) would pass the copy share at once.
KEEP_SHARE = 4
# A merge of sorted runs holds a batch of each run and copies them once: each run's
# batch is at most 1/(READ_SHARE x runs) of the limit.
READ_SHARE = 8


class OperatorMemory:
    """One operator's budget (``limit``, bytes, read each time it grows), the files it
    spills to, and the count of what it spilled (shown in the job's details)."""

    def __init__(self, limit: Callable[[], int], directory: Path | None = None,
                 on_spill: Callable[[int, int], None] | None = None,
                 on_release: Callable[[], None] | None = None) -> None:
        self._limit = limit
        self._directory = directory
        self._own_directory = directory is None      # a temporary one, removed on release
        self._on_spill = on_spill
        self._on_release = on_release
        self._names = itertools.count()
        self._lock = threading.Lock()
        self.spilled_bytes = 0
        self.spill_files = 0

    @classmethod
    def fixed(cls, limit: int, directory: Path | None = None) -> "OperatorMemory":
        """A budget that never changes (unit tests, and operators run outside a task)."""
        return cls(lambda: limit, directory)

    @property
    def limit(self) -> int:
        return max(1, self._limit())

    def new_file(self, what: str) -> Path:
        """A path for a new spill file; its directory is made on first use."""
        with self._lock:
            if self._directory is None:
                self._directory = Path(tempfile.mkdtemp(prefix="yarnflow-spill-"))
            self._directory.mkdir(parents=True, exist_ok=True)
            return self._directory / f"{what}-{next(self._names)}.arrow"

    def spilled(self, nbytes: int, files: int = 1) -> None:
        with self._lock:
            self.spilled_bytes += nbytes
            self.spill_files += files
        if self._on_spill is not None:
            self._on_spill(nbytes, files)

    def release(self) -> None:
        """The operator ended (whichever way): its share goes back to the slot; its
        files go with the task's spill directory, or now when the directory is its own."""
        if self._on_release is not None:
            self._on_release()
            self._on_release = None
        if self._own_directory and self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)


def retained_bytes(data: pa.Table | pa.RecordBatch) -> int:
    """The bytes holding ``data`` keeps in memory: whole buffers, where a slice's
    ``nbytes`` counts only its rows (a slice of a larger batch keeps all of it)."""
    return int(data.get_total_buffer_size())


Data = TypeVar("Data", pa.Table, pa.RecordBatch)


class Held(Generic[Data]):
    """What an operator holds in memory (tables or batches), counted as it is added,
    and the policy's answers about it against the operator's current limit."""

    def __init__(self, memory: OperatorMemory) -> None:
        self.memory = memory
        self.items: list[Data] = []
        self.bytes = 0
        self.rows = 0

    def __bool__(self) -> bool:
        return bool(self.items)

    def add(self, data: Data) -> None:
        self.items.append(data)
        self.bytes += retained_bytes(data)
        self.rows += data.num_rows

    def take(self) -> list[Data]:
        """Everything held, let go of: holding starts again from nothing."""
        items, self.items, self.bytes, self.rows = self.items, [], 0, 0
        return items

    def over_limit(self) -> bool:
        """More than the operator's whole share: it must spill now."""
        return self.bytes > self.memory.limit

    def too_big_to_copy(self) -> bool:
        """Past ``COPY_SHARE``: a copy of it would not fit beside it."""
        return not fits_a_copy(self.bytes, self.memory)

    def more_than_kept(self) -> bool:
        """Past ``KEEP_SHARE``: more than a merge may leave behind."""
        return self.bytes > self.memory.limit // KEEP_SHARE


def fits_a_copy(nbytes: int, memory: OperatorMemory) -> bool:
    """Whether ``nbytes`` held can be copied within the operator's share (a spilled
    bucket read back whole, or what is held in memory)."""
    return nbytes <= memory.limit // COPY_SHARE


def run_batch_bytes(memory: OperatorMemory, runs: int) -> int:
    """The most bytes per batch of a sorted run that a merge of ``runs`` runs reads."""
    return memory.limit // (READ_SHARE * runs)
