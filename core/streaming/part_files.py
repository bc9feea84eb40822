"""The exactly-once file sink's part files (Flink's ``FileSink`` buckets): what a sink
subtask writes, when a file may be seen, and what a restore does with what it finds.

A part file is written hidden (``.part-….inprogress``) while it is IN_PROGRESS. At a
checkpoint's barrier (and by size or age) it rolls: closed, it is PENDING on that
checkpoint. When the JobMaster says the checkpoint completed, the subtask commits its
pending files by renaming each to its final name; only then can a reader see it. A
restore commits the pending files the restored checkpoint recorded (the notification
may never have arrived) and deletes every other hidden file the subtask left: rows in
them belong to checkpoints that never completed, and the replay writes them again.

Bulk formats (Parquet) cannot append to a file after a failure, so every in-progress
file rolls at every barrier (Flink's ``OnCheckpointRollingPolicy``).
"""
from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field, replace
from typing import Protocol


class PartFileState(enum.Enum):
    IN_PROGRESS = "in-progress"
    PENDING = "pending"           # closed at a barrier; committed when its checkpoint is
    COMMITTED = "committed"       # renamed to its final name: visible
    DISCARDED = "discarded"       # its checkpoint never completed: deleted


_TRANSITIONS = {
    PartFileState.IN_PROGRESS: {PartFileState.PENDING, PartFileState.DISCARDED},
    PartFileState.PENDING: {PartFileState.COMMITTED, PartFileState.DISCARDED},
    PartFileState.COMMITTED: set(),
    PartFileState.DISCARDED: set(),
}


class IllegalPartFileTransition(RuntimeError):
    pass


# a file rolled by size or age between barriers: pending on the next checkpoint taken
NEXT_CHECKPOINT = 1 << 62


@dataclass(frozen=True)
class PartFile:
    bucket: str                  # the partition directory under the sink's path ("" none)
    name: str                    # its final name
    state: PartFileState
    rows: int = 0
    nbytes: int = 0
    opened_ms: float = 0.0
    checkpoint_id: int = -1      # the checkpoint it is pending on

    @property
    def hidden_name(self) -> str:
        return f".{self.name}.inprogress"

    def to(self, state: PartFileState, **changes: object) -> "PartFile":
        if state not in _TRANSITIONS[self.state]:
            raise IllegalPartFileTransition(
                f"part file {self.bucket}/{self.name}: {self.state.value} -> {state.value} "
                "is not allowed")
        return replace(self, state=state, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class RollingPolicy:
    """When an in-progress file closes besides the barrier: at ``max_part_bytes``, after
    ``rollover_interval_ms`` open, or ``inactivity_ms`` without rows (0: never)."""
    max_part_bytes: int = 128 << 20
    rollover_interval_ms: int = 0
    inactivity_ms: int = 0

    def should_roll(self, part: PartFile, now_ms: float, last_write_ms: float) -> bool:
        if part.nbytes >= self.max_part_bytes:
            return True
        if self.rollover_interval_ms and now_ms - part.opened_ms >= self.rollover_interval_ms:
            return True
        return bool(self.inactivity_ms) and now_ms - last_write_ms >= self.inactivity_ms


class PartFileStore(Protocol):
    """Where the files are: ``path`` is relative to the sink's directory."""

    def rename(self, src: str, dst: str) -> None: ...
    def exists(self, path: str) -> bool: ...
    def delete(self, path: str) -> None: ...
    def hidden_files(self, prefix: str) -> list[str]:
        """Every in-progress file under the sink whose name starts ``.prefix``."""


def run_id_of(job_id: str, uid: str) -> str:
    return hashlib.sha256(f"{job_id}/{uid}".encode()).hexdigest()[:12]


@dataclass
class Buckets:
    """One sink subtask's part files. ``run_id`` names its files apart from any other
    run's: made from the job's id and the sink's uid at a fresh start (so an attempt
    that failed before the first checkpoint is cleaned up after by the next), and
    kept in state after that (so a restore, even into a new job from a savepoint,
    goes on with the same names); ``counter`` numbers them."""
    subtask: int
    suffix: str
    run_id: str
    counter: int = 0
    open: dict[str, PartFile] = field(default_factory=dict)          # by bucket
    pending: list[PartFile] = field(default_factory=list)
    committed: int = 0

    @property
    def prefix(self) -> str:
        return f"part-{self.run_id}-{self.subtask}-"

    def path(self, part: PartFile, hidden: bool) -> str:
        name = part.hidden_name if hidden else part.name
        return f"{part.bucket}/{name}" if part.bucket else name

    def open_part(self, bucket: str, now_ms: float) -> PartFile:
        """The in-progress file rows of ``bucket`` go to (a new one if none is open)."""
        part = self.open.get(bucket)
        if part is None:
            part = PartFile(bucket, f"{self.prefix}{self.counter}{self.suffix}",
                            PartFileState.IN_PROGRESS, opened_ms=now_ms)
            self.counter += 1
            self.open[bucket] = part
        return part

    def wrote(self, bucket: str, rows: int, nbytes: int) -> None:
        part = self.open[bucket]
        self.open[bucket] = replace(part, rows=part.rows + rows, nbytes=part.nbytes + nbytes)

    def roll(self, bucket: str, checkpoint_id: int = NEXT_CHECKPOINT) -> PartFile:
        """Close ``bucket``'s in-progress file: pending on ``checkpoint_id`` (at its
        barrier), or on whichever checkpoint is taken next (rolled by size or age)."""
        part = self.open.pop(bucket).to(PartFileState.PENDING, checkpoint_id=checkpoint_id)
        self.pending.append(part)
        return part

    def snapshot(self, checkpoint_id: int) -> dict[str, object]:
        """At the barrier of ``checkpoint_id``, after every open file rolled: the state a
        restore needs (the files pending on it and before, and the names in use)."""
        if self.open:
            raise IllegalPartFileTransition(
                f"a snapshot with files still open ({sorted(self.open)}): roll them first")
        self.pending = [replace(p, checkpoint_id=checkpoint_id)
                        if p.checkpoint_id == NEXT_CHECKPOINT else p for p in self.pending]
        return {"run_id": self.run_id, "counter": self.counter,
                "pending": [[p.bucket, p.name, p.rows, p.checkpoint_id] for p in self.pending
                            if p.checkpoint_id <= checkpoint_id]}

    def commit_up_to(self, checkpoint_id: int, store: PartFileStore) -> list[PartFile]:
        """The checkpoint completed: its pending files (and any earlier one's, whose
        notification was lost) become visible."""
        done, kept = [], []
        for part in self.pending:
            if part.checkpoint_id <= checkpoint_id:
                _commit(self, part, store)
                done.append(part.to(PartFileState.COMMITTED))
            else:
                kept.append(part)
        self.pending = kept
        self.committed += len(done)
        return done

    @classmethod
    def restore(cls, subtask: int, suffix: str, state: dict[str, object] | None,
                store: PartFileStore, fresh_run_id: str) -> "Buckets":
        """From a completed checkpoint's state (None: a fresh start, as ``fresh_run_id``):
        commit its pending files, then delete every hidden file of this run and subtask
        left."""
        if state is None:
            buckets = cls(subtask, suffix, fresh_run_id)
            for leftover in store.hidden_files(buckets.prefix):
                store.delete(leftover)
            return buckets
        buckets = cls(subtask, suffix, run_id=str(state["run_id"]),
                      counter=int(state["counter"]))  # type: ignore[call-overload]
        pending = [PartFile(str(b), str(n), PartFileState.PENDING, rows=int(r),
                            checkpoint_id=int(c))
                   for b, n, r, c in state["pending"]]  # type: ignore[attr-defined]
        for part in pending:
            _commit(buckets, part, store)
        buckets.committed = len(pending)
        for leftover in store.hidden_files(buckets.prefix):
            store.delete(leftover)
        return buckets


def _commit(buckets: Buckets, part: PartFile, store: PartFileStore) -> None:
    """Rename a pending file to its final name; idempotent: a file committed before (by
    an attempt that then failed, or by a notification that came twice) stays."""
    hidden, final = buckets.path(part, True), buckets.path(part, False)
    if store.exists(hidden):
        store.rename(hidden, final)
    elif not store.exists(final):
        raise FileNotFoundError(
            f"pending part file {hidden} is gone and was never committed: the checkpoint "
            "directory and the sink's output no longer match (was the output cleaned by "
            "hand?)")
