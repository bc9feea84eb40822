"""What a user watches of a job's checkpoints (Flink's ``CheckpointStatsTracker`` and
the ``/jobs/:id/checkpoints`` REST shape): counts, the latest completed, failed and
restored checkpoint, and a bounded history."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from yarnflow.core.streaming.snapshots import SubtaskCheckpointMetrics

HISTORY_SIZE = 10     # Flink's web.checkpoints.history default


@dataclass
class CheckpointRecord:
    checkpoint_id: int
    kind: str
    status: str                  # IN_PROGRESS, COMPLETED, FAILED
    trigger_ms: float
    latest_ack_ms: float = 0.0
    duration_ms: float = 0.0
    size: int = 0
    acknowledged: int = 0
    total: int = 0
    location: str = ""
    failure: str = ""
    subtasks: dict[str, SubtaskCheckpointMetrics] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        alignment = [m.alignment_ms for m in self.subtasks.values()]
        return {
            "id": self.checkpoint_id, "status": self.status,
            "is_savepoint": self.kind != "checkpoint", "checkpoint_type": self.kind.upper(),
            "trigger_timestamp": int(self.trigger_ms),
            "latest_ack_timestamp": int(self.latest_ack_ms),
            "end_to_end_duration": int(self.duration_ms), "state_size": self.size,
            "checkpointed_size": self.size,
            "num_subtasks": self.total, "num_acknowledged_subtasks": self.acknowledged,
            "alignment_duration": int(max(alignment, default=0)),
            "external_path": self.location, "failure_message": self.failure,
            "subtasks": {name: {"sync_duration": int(m.sync_ms),
                                "async_duration": int(m.async_ms),
                                "alignment_duration": int(m.alignment_ms),
                                "start_delay": int(m.start_delay_ms), "state_size": m.size}
                         for name, m in sorted(self.subtasks.items())},
        }


class CheckpointStatsTracker:
    def __init__(self) -> None:
        self.history: deque[CheckpointRecord] = deque(maxlen=HISTORY_SIZE)
        self._by_id: dict[int, CheckpointRecord] = {}
        self.completed = 0
        self.failed = 0
        self.restored: dict[str, Any] | None = None
        self.latest_completed: CheckpointRecord | None = None
        self.latest_failed: CheckpointRecord | None = None
        self.latest_savepoint: CheckpointRecord | None = None

    def triggered(self, record: CheckpointRecord) -> None:
        self.history.appendleft(record)
        self._by_id = {r.checkpoint_id: r for r in self.history}

    def get(self, checkpoint_id: int) -> CheckpointRecord | None:
        return self._by_id.get(checkpoint_id)

    def acknowledged(self, checkpoint_id: int, subtask: str, metrics: SubtaskCheckpointMetrics,
                     now_ms: float) -> None:
        record = self._by_id.get(checkpoint_id)
        if record is not None:
            record.acknowledged += 1
            record.latest_ack_ms = now_ms
            record.subtasks[subtask] = metrics

    def ended(self, checkpoint_id: int, completed: bool, now_ms: float, size: int = 0,
              location: str = "", failure: str = "") -> None:
        record = self._by_id.get(checkpoint_id)
        if record is None:
            return
        record.status = "COMPLETED" if completed else "FAILED"
        record.duration_ms = now_ms - record.trigger_ms
        record.size, record.location, record.failure = size, location, failure
        if completed:
            self.completed += 1
            self.latest_completed = record
            if record.kind != "checkpoint":
                self.latest_savepoint = record
        else:
            self.failed += 1
            self.latest_failed = record

    def restored_from(self, checkpoint_id: int, location: str, now_ms: float,
                      savepoint: bool) -> None:
        self.restored = {"id": checkpoint_id, "restore_timestamp": int(now_ms),
                         "is_savepoint": savepoint, "external_path": location}

    def in_progress(self) -> int:
        return sum(1 for r in self.history if r.status == "IN_PROGRESS")

    def as_json(self) -> dict[str, Any]:
        """Flink's ``/jobs/:jobid/checkpoints`` shape (the fields yarnflow has)."""
        durations = [r.duration_ms for r in self.history if r.status == "COMPLETED"]
        sizes = [r.size for r in self.history if r.status == "COMPLETED"]

        def summary(values: list[float]) -> dict[str, int]:
            if not values:
                return {"min": 0, "max": 0, "avg": 0}
            return {"min": int(min(values)), "max": int(max(values)),
                    "avg": int(sum(values) / len(values))}
        return {
            "counts": {"restored": 1 if self.restored else 0,
                       "total": self.completed + self.failed + self.in_progress(),
                       "in_progress": self.in_progress(), "completed": self.completed,
                       "failed": self.failed},
            "summary": {"end_to_end_duration": summary(durations),
                        "state_size": summary([float(s) for s in sizes])},
            "latest": {
                "completed": self.latest_completed.as_json() if self.latest_completed else None,
                "failed": self.latest_failed.as_json() if self.latest_failed else None,
                "restored": self.restored,
                "savepoint": self.latest_savepoint.as_json() if self.latest_savepoint else None},
            "history": [r.as_json() for r in self.history],
        }
