"""A checkpoint's and a savepoint's metadata: what ``_metadata`` holds (every
operator's state by uid, relative file names, a format version), written last and
whole. Shared by the JobMaster, which writes and restores it, and the client, which
checks a savepoint against a job before submitting it."""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field

from yarnflow.core.fs import FileSystem
from yarnflow.core.streaming.events import CheckpointKind
from yarnflow.core.streaming.snapshots import OperatorSubtaskState

METADATA = "_metadata"
FORMAT = "yarnflow-checkpoint"
VERSION = 1          # a later yarnflow reads every version up to its own
CHECKPOINT_DIR = re.compile(r"^chk-(\d+)$")


class CheckpointFormatError(ValueError):
    pass


@dataclass(frozen=True)
class OperatorState:
    """One operator's state across its subtasks, filed under its uid."""
    uid: str
    vertex_name: str
    parallelism: int
    max_parallelism: int
    subtasks: dict[int, OperatorSubtaskState] = field(default_factory=dict)


@dataclass(frozen=True)
class CompletedCheckpoint:
    job_id: str
    checkpoint_id: int
    kind: CheckpointKind
    trigger_ms: float
    completed_ms: float
    location: str                           # its directory (a full URI)
    operators: dict[str, OperatorState]
    finished: tuple[tuple[str, int], ...] = ()    # (vertex name, subtask) ended before it

    @property
    def size(self) -> int:
        return sum(s.size for op in self.operators.values() for s in op.subtasks.values())

    @property
    def metadata_uri(self) -> str:
        return f"{self.location}/{METADATA}"

    def to_json(self) -> bytes:
        return json.dumps({
            "format": FORMAT, "version": VERSION, "job_id": self.job_id,
            "checkpoint_id": self.checkpoint_id, "kind": self.kind.value,
            "trigger_ms": self.trigger_ms, "completed_ms": self.completed_ms,
            "finished": [list(f) for f in self.finished],
            "operators": {uid: {
                "vertex": op.vertex_name, "parallelism": op.parallelism,
                "max_parallelism": op.max_parallelism,
                "subtasks": {str(i): {"files": list(s.files),
                                      "inline": base64.b64encode(s.inline).decode(),
                                      "size": s.size}
                             for i, s in sorted(op.subtasks.items())}}
                for uid, op in sorted(self.operators.items())},
        }, indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes, location: str) -> "CompletedCheckpoint":
        try:
            body = json.loads(data)
        except ValueError as err:
            raise CheckpointFormatError(f"{location}/{METADATA} is not a checkpoint's "
                                        f"metadata: {err}") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise CheckpointFormatError(f"{location}/{METADATA} is not a yarnflow checkpoint "
                                        "or savepoint")
        if int(body.get("version", 0)) > VERSION:
            raise CheckpointFormatError(
                f"{location} was written by a newer yarnflow (format version "
                f"{body['version']}; this one reads up to {VERSION}). Fix: restore it with "
                "that version or a later one")
        operators = {
            uid: OperatorState(uid, op["vertex"], int(op["parallelism"]),
                               int(op["max_parallelism"]),
                               {int(i): OperatorSubtaskState(tuple(s["files"]),
                                                             base64.b64decode(s["inline"]),
                                                             int(s["size"]))
                                for i, s in op["subtasks"].items()})
            for uid, op in body["operators"].items()}
        return cls(str(body["job_id"]), int(body["checkpoint_id"]), CheckpointKind(body["kind"]),
                   float(body["trigger_ms"]), float(body["completed_ms"]), location, operators,
                   tuple((str(v), int(i)) for v, i in body.get("finished", [])))


def write_metadata(fs: FileSystem, checkpoint: CompletedCheckpoint) -> None:
    """The last write of a checkpoint, whole or not at all (its directory exists
    already when some task wrote files there; not when all state was inline)."""
    fs.mkdirs(checkpoint.location)
    if not fs.write_whole(checkpoint.metadata_uri, checkpoint.to_json()):
        raise FileExistsError(f"{checkpoint.metadata_uri} exists already: another attempt "
                              "of this job completed the same checkpoint")


def read_checkpoint(fs: FileSystem, location: str) -> CompletedCheckpoint:
    """A checkpoint or savepoint directory (or its ``_metadata`` file), as the user named
    it for ``--from-savepoint``."""
    location = location.rstrip("/")
    if location.endswith(f"/{METADATA}"):
        location = location[: -len(METADATA) - 1]
    uri = f"{location}/{METADATA}"
    if not fs.exists(uri):
        raise FileNotFoundError(f"{location} holds no completed checkpoint or savepoint "
                                f"(no {METADATA})")
    with fs.open_input_stream(uri) as f:
        return CompletedCheckpoint.from_json(f.read(), location)


def read_uids(fs: FileSystem, location: str) -> set[str]:
    """The uids a savepoint or checkpoint holds state for."""
    return set(read_checkpoint(fs, location).operators)
