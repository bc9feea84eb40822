"""The TaskExecutor's managed memory (Flink's ``MemoryManager``, seed 003): each slot's
share for the operators that hold data, divided among those running in it.

A slot's managed memory is ``taskmanager.memory.managed.fraction`` of its profile's
memory. Slot sharing runs a subtask of several vertices in one slot, and which of
them hold data at the same time is known only at run time (a blocking exchange ends
one stage before the next starts), so the share is not fixed when the job is planned:
each operator that holds data registers while it runs, and its limit is the slot's
managed memory over the operators registered in that slot now. An operator reads its
limit as it grows, so one that started alone gives up half when a second starts.
"""
from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Callable

from yarnflow.core.memory import OperatorMemory


class MemoryManager:
    def __init__(self, slot_memory_mb: int, fraction: float) -> None:
        self.slot_bytes = int(slot_memory_mb * fraction * 2**20)
        self._lock = threading.Lock()
        self._holders: Counter[str] = Counter()     # operators holding data, per slot

    def register(self, slot: str, directory: Path,
                 on_spill: Callable[[int, int], None]) -> OperatorMemory:
        """An operator of a task in ``slot`` (its AllocationID) starts holding data; it
        spills under ``directory`` and releases its share when it ends."""
        with self._lock:
            self._holders[slot] += 1
        released = threading.Event()

        def limit() -> int:
            with self._lock:
                return self.slot_bytes // max(1, self._holders[slot])

        def release() -> None:
            if released.is_set():
                return
            released.set()
            with self._lock:
                self._holders[slot] -= 1
                if self._holders[slot] <= 0:
                    del self._holders[slot]
        return OperatorMemory(limit, directory, on_spill, release)

    def holders(self, slot: str) -> int:
        with self._lock:
            return self._holders[slot]
