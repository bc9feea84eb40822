"""A restart on its way: the subtasks being stopped for it, and when it may run."""
from __future__ import annotations

from dataclasses import dataclass, field

from yarnflow.appmaster.jobmaster.executiongraph import ExecutionVertex
from yarnflow.rpc.endpoint import ScheduledTask


@dataclass(eq=False)
class PendingRestart:
    """Subtasks being stopped for a restart; they restart when all have stopped and
    ``due`` (the restart strategy's pause) has passed."""
    vertices: set[ExecutionVertex] = field(default_factory=set)
    due: float = 0.0
    timer: ScheduledTask | None = None
