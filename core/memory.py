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
"""
from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

UNLIMITED = sys.maxsize


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


def memory_of(ctx: Any) -> OperatorMemory:
    """An operator's memory from its context: a task's share of its slot, or no limit
    where the context has none (an operator run by a test or by the client)."""
    share = getattr(ctx, "memory", None)
    return share() if share is not None else OperatorMemory.fixed(UNLIMITED)
