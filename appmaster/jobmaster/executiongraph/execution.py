"""One attempt to run one subtask."""
from __future__ import annotations

import dataclasses
import uuid
from typing import TYPE_CHECKING, Any

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, ResourceID
from yarnflow.core.messages import AskAgain, TaskMetrics
from yarnflow.core.status import (
    EXECUTION_TRANSITIONS, ExecutionState, check_transition)

if TYPE_CHECKING:
    from yarnflow.appmaster.jobmaster.executiongraph.graph import ExecutionVertex


_GROWING = ("records_in", "records_out", "bytes_in", "bytes_out", "inputs_done")


class Execution:
    __slots__ = ("vertex", "attempt_number", "attempt_id", "state", "slot", "failure",
                 "failure_detail", "metrics", "state_timestamps", "splits_local",
                 "splits_remote", "last_split_answer", "collected")

    def __init__(self, vertex: "ExecutionVertex", attempt_number: int) -> None:
        self.vertex = vertex
        self.attempt_number = attempt_number
        self.attempt_id = ExecutionAttemptID(uuid.uuid4().hex)
        self.state = ExecutionState.CREATED
        self.slot: Any = None          # the LogicalSlot it was assigned
        self.failure: str = ""
        self.failure_detail: str = ""
        self.metrics: TaskMetrics | None = None
        self.state_timestamps: dict[ExecutionState, float] = {}
        self.splits_local = 0           # input splits read on a host that stores them
        self.splits_remote = 0
        # (request number, answer) of the attempt's latest split request, so a retried
        # request gets the same split instead of a second one
        self.last_split_answer: tuple[int, bytes | AskAgain | None] | None = None
        self.collected = b""    # a collect sink's rows, from its FINISHED report

    @classmethod
    def finished_earlier(cls, vertex: "ExecutionVertex", attempt_number: int,
                         timestamps: dict[ExecutionState, float],
                         metrics: TaskMetrics | None) -> "Execution":
        """An attempt that FINISHED under an earlier ApplicationMaster, as its job event
        log tells it: made FINISHED, not moved there (it never ran in this one)."""
        execution = cls(vertex, attempt_number)
        execution.state = ExecutionState.FINISHED
        execution.state_timestamps = dict(timestamps)
        execution.metrics = metrics
        return execution

    def update_metrics(self, metrics: TaskMetrics) -> None:
        """An attempt's counts only grow: a progress report overtaken on the way by a
        newer one (they travel on different calls) must not set them back."""
        old = self.metrics
        if old is None or all(getattr(metrics, name) >= getattr(old, name) for name in _GROWING):
            if old is not None and old.produced_bytes and not metrics.produced_bytes:
                # a progress report overtaken by the final one, equal in every count:
                # the bytes the final one carried are what adaptive execution decides on
                metrics = dataclasses.replace(metrics, produced_bytes=old.produced_bytes)
            self.metrics = metrics

    def transition(self, target: ExecutionState) -> None:
        check_transition(EXECUTION_TRANSITIONS, self.state, target, lambda: f"execution {self}")
        self.state = target
        self.state_timestamps[target] = self.vertex.job_vertex.graph.clock.time()

    @property
    def resource_id(self) -> ResourceID | None:
        return self.slot.location.resource_id if self.slot is not None else None

    @property
    def allocation_id(self) -> AllocationID | None:
        return self.slot.allocation_id if self.slot is not None else None

    def __repr__(self) -> str:
        return f"{self.vertex.name_with_index} attempt #{self.attempt_number} ({self.state.name})"
