"""Executors' peak resident memory on the local target, read while each one lives.

The kernel's high-water mark (``VmHWM`` in ``/proc/<pid>/status``) is read only of a
process the local driver still holds for that executor, and only while the process
is the one first seen under that pid (its start time in ``/proc/<pid>/stat``). Reading
a pid after the job, as the tests once did, read whatever process had the pid by then:
a released executor is reaped at once, and a full suite forks fast enough on a
machine with ``kernel.pid_max`` 32,768 that a pid comes round within minutes."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from yarnflow.conf import Configuration, options
from yarnflow.core.worker_spec import WorkerSpec


@dataclass
class _Seen:
    pid: int
    started: str              # field 22 of /proc/<pid>/stat: the process's identity with its pid
    container_mb: int
    peak_mb: float = 0.0


def _started(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _high_water_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            line = next(row for row in status if row.startswith("VmHWM:"))
    except (OSError, StopIteration):        # gone, or a zombie (no memory left)
        return None
    return int(line.split()[1]) / 1024


class ExecutorPeaks:
    """Samples every executor of a local cluster every ``interval`` seconds (and once
    more when it stops), keyed by ResourceID (the name of its log), with its
    container's size (its slots plus ``taskmanager.memory.overhead``)."""

    def __init__(self, cluster: Any, config: Configuration, interval: float = 0.2) -> None:
        self._cluster = cluster
        self._overhead_mb = config.get(options.WORKER_OVERHEAD_MEMORY)
        self._interval = interval
        self._seen: dict[str, _Seen] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="executor-peaks", daemon=True)

    def __enter__(self) -> "ExecutorPeaks":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._done.wait(self._interval):
            self.sample()
        self.sample()            # the watcher's last: nothing samples beside it

    def sample(self) -> None:
        for worker in self._cluster.overview().workers:
            pid = self._cluster.driver.pid_of(worker.resource_id)
            if not pid:
                continue
            seen = self._seen.get(worker.resource_id)
            if seen is None:
                started = _started(pid)
                if started is None:
                    continue
                size = WorkerSpec(worker.slot_profile, worker.num_slots, self._overhead_mb)
                seen = self._seen[worker.resource_id] = _Seen(pid, started, size.container.memory_mb)
            peak = _high_water_mb(pid)
            # still the same process (not a later one under a reused pid), still held
            if peak is None or _started(pid) != seen.started \
                    or self._cluster.driver.pid_of(worker.resource_id) != pid:
                continue
            seen.peak_mb = max(seen.peak_mb, peak)

    @property
    def peaks(self) -> dict[str, tuple[float, int]]:
        """ResourceID -> (peak MB, container MB), for every executor read at least once."""
        return {rid: (s.peak_mb, s.container_mb) for rid, s in self._seen.items() if s.peak_mb}

    def over(self) -> dict[str, tuple[float, int]]:
        """The executors whose peak passed their container's size."""
        return {rid: peak for rid, peak in self.peaks.items() if peak[0] > peak[1]}

    def largest_mb(self) -> float:
        return max((peak for peak, _ in self.peaks.values()), default=0.0)

    def containers_mb(self) -> int:
        """What the job's executors were given in all: every container seen."""
        return sum(s.container_mb for s in self._seen.values())
