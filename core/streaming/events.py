"""What travels in a stream beside its records (Flink's ``RuntimeEvent``s and
``StreamElement``s): checkpoint barriers, watermarks, a channel's idleness, and the end
of a bounded input. They move in order with the batches around them: that order is
what makes a barrier cut the stream consistently and a watermark a promise about the
records behind it.

On the wire an event is a zero-row batch whose Arrow IPC message carries the event as
application metadata (``encode``/``decode``): Arrow Flight streams it in place, and an
in-process channel passes the object itself.
"""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Union

MIN_WATERMARK = -(1 << 63)
MAX_WATERMARK = (1 << 63) - 1     # the end of event time: a finished input's watermark


class CheckpointKind(enum.Enum):
    """Why a barrier flows. A savepoint is a checkpoint the user owns; a terminating one
    (``yarnflow stop``) ends the job once it completes, its output committed."""
    CHECKPOINT = "checkpoint"
    SAVEPOINT = "savepoint"
    TERMINATE = "terminate"

    @property
    def is_savepoint(self) -> bool:
        return self is not CheckpointKind.CHECKPOINT


@dataclass(frozen=True)
class CheckpointBarrier:
    checkpoint_id: int
    timestamp_ms: int                       # when the coordinator triggered it
    kind: CheckpointKind = CheckpointKind.CHECKPOINT
    location: str = ""                      # the directory its tasks write into


@dataclass(frozen=True)
class Watermark:
    """No record with an event time at or below ``timestamp`` (ms) follows on this
    channel, bar late ones."""
    timestamp: int


@dataclass(frozen=True)
class WatermarkStatus:
    """An idle channel (no records for ``idleness``) holds no watermark back until it
    becomes active again."""
    idle: bool


@dataclass(frozen=True)
class CancelCheckpoint:
    """A checkpoint was aborted: a task aligning it stops waiting (Flink's
    ``CancelCheckpointMarker``)."""
    checkpoint_id: int


Event = Union[CheckpointBarrier, Watermark, WatermarkStatus, CancelCheckpoint]

METADATA_KEY = b"yarnflow.event"


def encode(event: Event) -> bytes:
    body: dict[str, object]
    if isinstance(event, CheckpointBarrier):
        body = {"barrier": [event.checkpoint_id, event.timestamp_ms, event.kind.value,
                            event.location]}
    elif isinstance(event, Watermark):
        body = {"watermark": event.timestamp}
    elif isinstance(event, WatermarkStatus):
        body = {"idle": event.idle}
    elif isinstance(event, CancelCheckpoint):
        body = {"cancel": event.checkpoint_id}
    else:
        raise TypeError(f"not a stream event: {event!r}")
    return json.dumps(body, separators=(",", ":")).encode()


def decode(data: bytes) -> Event:
    body = json.loads(data)
    if "barrier" in body:
        checkpoint_id, timestamp, kind, location = body["barrier"]
        return CheckpointBarrier(int(checkpoint_id), int(timestamp), CheckpointKind(kind),
                                 str(location))
    if "watermark" in body:
        return Watermark(int(body["watermark"]))
    if "idle" in body:
        return WatermarkStatus(bool(body["idle"]))
    if "cancel" in body:
        return CancelCheckpoint(int(body["cancel"]))
    raise ValueError(f"not a stream event: {data[:80]!r}")
