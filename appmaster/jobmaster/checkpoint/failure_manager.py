"""Whether a failed checkpoint fails the job (Flink's ``CheckpointFailureManager``).

Checkpoints that fail in a row count against
``execution.checkpointing.tolerable-failed-checkpoints``; one that completes resets
the count. Only failures of a checkpoint that ran count: one never triggered (tasks
not running yet, too many in progress, the minimum pause) is not a failure of the
job's ability to checkpoint, and a savepoint's failure is the user's to see, not a
reason to restart the job.
"""
from __future__ import annotations

import enum


class CheckpointFailureReason(enum.Enum):
    # not triggered: never counted
    NOT_ALL_TASKS_RUNNING = ("not every task is running", False)
    TOO_MANY_CONCURRENT = ("too many checkpoints in progress", False)
    MINIMUM_PAUSE = ("the minimum pause since the last checkpoint has not passed", False)
    COORDINATOR_SHUTDOWN = ("the job is stopping", False)
    # triggered, then failed: counted
    EXPIRED = ("expired", True)
    DECLINED = ("a task declined it", True)
    TASK_FAILURE = ("a task failed during it", True)
    FINALIZE_FAILED = ("its metadata could not be written", True)
    # a newer checkpoint completed first; what it covered is covered
    SUBSUMED = ("a later checkpoint completed first", False)

    def __init__(self, message: str, counts: bool) -> None:
        self.message = message
        self.counts = counts


class CheckpointFailureManager:
    def __init__(self, tolerable: int) -> None:
        self._tolerable = tolerable
        self.continuous_failures = 0

    def failed(self, reason: CheckpointFailureReason, savepoint: bool) -> bool:
        """Count a failure; True when the job must fail over now."""
        if savepoint or not reason.counts:
            return False
        self.continuous_failures += 1
        return self.continuous_failures > self._tolerable

    def completed(self) -> None:
        self.continuous_failures = 0
