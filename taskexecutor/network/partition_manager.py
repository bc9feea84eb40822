"""The partitions this TaskExecutor holds, found by id for local and remote readers."""
from __future__ import annotations

import threading
from typing import Callable

from yarnflow.core.ids import JobID
from yarnflow.core.clock import SYSTEM_CLOCK, Clock, Deadline
from yarnflow.core.jobgraph import PartitionType
from yarnflow.core.errors import TaskCancelled
from yarnflow.taskexecutor.network.partition import PartitionTimeout, ResultPartition


class ResultPartitionManager:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._partitions: dict[str, ResultPartition] = {}
        self._cond = threading.Condition()

    def register(self, partition: ResultPartition) -> None:
        with self._cond:
            self._partitions[partition.partition_id] = partition
            self._cond.notify_all()

    def get(self, partition_id: str, timeout: float,
            cancelled: Callable[[], bool] = lambda: False) -> ResultPartition:
        """The partition, waiting up to ``timeout`` for its producer task to start."""
        deadline = Deadline(self._clock, timeout)
        with self._cond:
            while partition_id not in self._partitions:
                if cancelled():
                    raise TaskCancelled()
                remaining = deadline.left()
                if remaining <= 0:
                    raise PartitionTimeout(
                        f"partition {partition_id} did not appear on this TaskExecutor within "
                        f"{timeout:g} s (taskmanager.network.partition-request-timeout): its "
                        "producer never started here")
                self._cond.wait(min(remaining, 0.2))
            return self._partitions[partition_id]

    def release(self, partition_id: str) -> None:
        with self._cond:
            partition = self._partitions.pop(partition_id, None)
        if partition is not None:
            partition.release()

    def release_job(self, job_id: JobID) -> None:
        with self._cond:
            doomed = [p for p in self._partitions.values() if p.job_id == job_id]
            for partition in doomed:
                del self._partitions[partition.partition_id]
        for partition in doomed:
            partition.release()

    def holds_blocking_partitions(self) -> bool:
        with self._cond:
            return any(p.partition_type is PartitionType.BLOCKING
                       for p in self._partitions.values())

    def jobs_with_blocking_partitions(self) -> set[str]:
        """Jobs whose JobMasters must keep hearing from this executor: results of theirs
        that consumers will still read are here."""
        with self._cond:
            return {p.job_id for p in self._partitions.values()
                    if p.partition_type is PartitionType.BLOCKING}
