"""One checkpoint between its trigger and its completion or abort (Flink's
``PendingCheckpoint``)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from yarnflow.core.ids import ExecutionAttemptID
from yarnflow.core.streaming.events import CheckpointKind
from yarnflow.core.streaming.snapshots import OperatorSubtaskState, SubtaskCheckpointMetrics


class PendingState(enum.Enum):
    PENDING = "pending"            # waiting for acknowledgements
    FINALIZING = "finalizing"      # every task acknowledged: its metadata is being written
    COMPLETED = "completed"
    ABORTED = "aborted"


_TRANSITIONS = {
    PendingState.PENDING: {PendingState.FINALIZING, PendingState.ABORTED},
    PendingState.FINALIZING: {PendingState.COMPLETED, PendingState.ABORTED},
    PendingState.COMPLETED: set(),
    PendingState.ABORTED: set(),
}


class IllegalCheckpointTransition(RuntimeError):
    pass


@dataclass(frozen=True)
class TaskRef:
    """A subtask a checkpoint waits for, and what its state is filed under."""
    vertex_id: str
    vertex_name: str
    subtask_index: int
    parallelism: int
    max_parallelism: int


@dataclass
class PendingCheckpoint:
    checkpoint_id: int
    kind: CheckpointKind
    trigger_ms: float                  # wall clock, as Flink reports it
    trigger_monotonic: float
    location: str                      # its directory on the cluster's file system
    waiting: dict[ExecutionAttemptID, TaskRef]
    finished: tuple[TaskRef, ...] = ()    # subtasks that ended before it (FLIP-147)
    acknowledged: dict[ExecutionAttemptID, TaskRef] = field(default_factory=dict)
    states: dict[tuple[str, int], dict[str, OperatorSubtaskState]] = field(default_factory=dict)
    metrics: dict[tuple[str, int], SubtaskCheckpointMetrics] = field(default_factory=dict)
    state: PendingState = PendingState.PENDING
    failure: str = ""
    triggered: set[ExecutionAttemptID] = field(default_factory=set)   # sent its barrier

    def to(self, state: PendingState) -> None:
        if state not in _TRANSITIONS[self.state]:
            raise IllegalCheckpointTransition(
                f"checkpoint {self.checkpoint_id}: {self.state.value} -> {state.value} "
                "is not allowed")
        self.state = state

    def acknowledge(self, attempt: ExecutionAttemptID, states: dict[str, OperatorSubtaskState],
                    metrics: SubtaskCheckpointMetrics) -> bool:
        """Record one task's acknowledgement; False if it was not awaited (a repeat, or
        an attempt that is not part of this checkpoint)."""
        if self.state is not PendingState.PENDING:
            return False
        ref = self.waiting.pop(attempt, None)
        if ref is None:
            return False
        self.acknowledged[attempt] = ref
        self.states[(ref.vertex_id, ref.subtask_index)] = dict(states)
        self.metrics[(ref.vertex_id, ref.subtask_index)] = metrics
        return True

    @property
    def fully_acknowledged(self) -> bool:
        return not self.waiting

    @property
    def size(self) -> int:
        return sum(s.size for states in self.states.values() for s in states.values())
