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

import logging

from yarnflow.core.fs import FileSystem
from yarnflow.core.streaming.checkpoint_metadata import (
    CHECKPOINT_DIR, METADATA, CheckpointFormatError, CompletedCheckpoint, read_checkpoint,
    write_metadata)
from yarnflow.core.streaming.events import CheckpointKind

log = logging.getLogger(__name__)


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
            match = CHECKPOINT_DIR.match(name)
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
