"""Completed checkpoints on the cluster's file system (Flink's
``CompletedCheckpointStore`` and checkpoint storage): what a restart and a new
ApplicationMaster attempt restore from.

Layout: ``<state.checkpoints.dir>/<job id>/chk-<n>/``, holding the files the tasks
wrote and, written last, ``_metadata``. The metadata is written under a hidden name
and renamed, so a directory with ``_metadata`` is a completed checkpoint and one
without is not (a crash mid-way leaves no half checkpoint to restore). Only
``state.checkpoints.num-retained`` are kept; savepoints live where the user says and
are never pruned. Paths inside the metadata are relative to its directory, so a
savepoint can be moved.
"""
from __future__ import annotations

import base64
import json
import logging
import re
from dataclasses import dataclass, field

from yarnflow.core.streaming.snapshots import OperatorSubtaskState
from yarnflow.core.fs import FileSystem
from yarnflow.core.streaming.events import CheckpointKind

log = logging.getLogger(__name__)

METADATA = "_metadata"
FORMAT = "yarnflow-checkpoint"
VERSION = 1          # a later yarnflow reads every version up to its own
_CHK = re.compile(r"^chk-(\d+)$")


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


class CompletedCheckpointStore:
    """One job's completed checkpoints, newest last."""

    def __init__(self, fs: FileSystem, job_dir: str, retained: int) -> None:
        self._fs = fs
        self.job_dir = job_dir.rstrip("/")
        self._retained = retained
        self._checkpoints: list[CompletedCheckpoint] = []

    def location(self, checkpoint_id: int) -> str:
        return f"{self.job_dir}/chk-{checkpoint_id}"

    def recover(self) -> list[CompletedCheckpoint]:
        """What an earlier attempt completed, read back from the file system; directories
        of checkpoints it never completed are deleted. Runs before the first trigger."""
        found: list[CompletedCheckpoint] = []
        for name in self._fs.list_dir(self.job_dir):
            match = _CHK.match(name)
            if not match:
                continue
            location = f"{self.job_dir}/{name}"
            if self._fs.exists(f"{location}/{METADATA}"):
                try:
                    found.append(read_checkpoint(self._fs, location))
                except CheckpointFormatError as err:
                    log.warning("skipping %s: %s", location, err)
            else:
                log.info("deleting %s: a checkpoint that never completed", location)
                self._fs.delete(location)
        found.sort(key=lambda c: c.checkpoint_id)
        self._checkpoints = found
        self._prune()
        return list(self._checkpoints)

    def add(self, checkpoint: CompletedCheckpoint) -> list[CompletedCheckpoint]:
        """Write ``checkpoint``'s metadata (completing it) and prune older ones; the
        checkpoints pruned. Savepoints are kept but never counted or pruned."""
        write_metadata(self._fs, checkpoint)
        if checkpoint.kind is not CheckpointKind.CHECKPOINT:
            return []
        self._checkpoints.append(checkpoint)
        return self._prune()

    def _prune(self) -> list[CompletedCheckpoint]:
        pruned = []
        while len(self._checkpoints) > self._retained:
            old = self._checkpoints.pop(0)
            try:
                self._fs.delete(old.location)
            except OSError as err:        # a later prune or recovery tries again
                log.warning("could not delete %s: %s", old.location, err)
            pruned.append(old)
        return pruned

    def latest(self) -> CompletedCheckpoint | None:
        return self._checkpoints[-1] if self._checkpoints else None

    def max_id(self) -> int:
        return max((c.checkpoint_id for c in self._checkpoints), default=0)

    def all(self) -> list[CompletedCheckpoint]:
        return list(self._checkpoints)
