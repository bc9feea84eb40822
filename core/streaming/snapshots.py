"""What a task acknowledges a checkpoint with, and how it travels: each operator's
part (files in the checkpoint's directory, small state inline) and the subtask's
figures. Shared by the task that sends it and the coordinator that files it."""
from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class OperatorSubtaskState:
    """What one subtask's operator acknowledged: files it wrote into the checkpoint's
    directory (relative to it) and small state inline (a source's offsets)."""
    files: tuple[str, ...] = ()
    inline: bytes = b""
    size: int = 0


@dataclass(frozen=True)
class SubtaskCheckpointMetrics:
    """Flink's per-subtask checkpoint figures, in milliseconds and bytes."""
    sync_ms: float = 0.0
    async_ms: float = 0.0
    alignment_ms: float = 0.0
    start_delay_ms: float = 0.0
    size: int = 0


def encode_ack(states: dict[str, OperatorSubtaskState], metrics: SubtaskCheckpointMetrics) -> bytes:
    return json.dumps({
        "states": {uid: {"files": list(s.files), "inline": base64.b64encode(s.inline).decode(),
                         "size": s.size} for uid, s in states.items()},
        "metrics": asdict(metrics)}).encode()


def decode_ack(data: bytes) -> tuple[dict[str, OperatorSubtaskState], SubtaskCheckpointMetrics]:
    body = json.loads(data)
    states = {uid: OperatorSubtaskState(tuple(s["files"]), base64.b64decode(s["inline"]),
                                        int(s["size"])) for uid, s in body["states"].items()}
    return states, SubtaskCheckpointMetrics(**body["metrics"])


@dataclass(frozen=True)
class SubtaskRestore:
    """What one subtask is deployed with from a completed checkpoint: each uid's inline
    bytes of this subtask and every subtask's files (full URIs), and whether the
    subtask had finished before the checkpoint (then it ends at once: what it produced
    is in its consumers' state)."""
    checkpoint_id: int
    operators: dict[str, tuple[bytes, tuple[str, ...]]]
    finished: bool = False

    def encode(self) -> bytes:
        return json.dumps({"checkpoint_id": self.checkpoint_id, "finished": self.finished,
                           "operators": {uid: [base64.b64encode(inline).decode(), list(files)]
                                         for uid, (inline, files) in self.operators.items()}
                           }).encode()

    @classmethod
    def decode(cls, data: bytes) -> "SubtaskRestore | None":
        if not data:
            return None
        body = json.loads(data)
        return cls(int(body["checkpoint_id"]),
                   {uid: (base64.b64decode(inline), tuple(files))
                    for uid, (inline, files) in body["operators"].items()},
                   bool(body["finished"]))
