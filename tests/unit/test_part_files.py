"""The exactly-once file sink's part files: in-progress → pending → committed, and what
a restore does, against a dictionary of files."""
from __future__ import annotations

import pytest

from yarnflow.core.streaming.part_files import (
    Buckets, IllegalPartFileTransition, PartFile, PartFileState, RollingPolicy, run_id_of)


class Files:
    """A sink directory: path → rows, for the states' file operations."""

    def __init__(self) -> None:
        self.files: dict[str, int] = {}

    def rename(self, src: str, dst: str) -> None:
        assert dst not in self.files
        self.files[dst] = self.files.pop(src)

    def exists(self, path: str) -> bool:
        return path in self.files

    def delete(self, path: str) -> None:
        self.files.pop(path, None)

    def hidden_files(self, prefix: str) -> list[str]:
        return [p for p in self.files if p.rsplit("/", 1)[-1].startswith(f".{prefix}")]

    def visible(self) -> dict[str, int]:
        return {p: r for p, r in self.files.items() if not p.rsplit("/", 1)[-1].startswith(".")}


def write(buckets: Buckets, files: Files, bucket: str, rows: int) -> None:
    part = buckets.open_part(bucket, 0.0)
    path = buckets.path(part, hidden=True)
    files.files[path] = files.files.get(path, 0) + rows
    buckets.wrote(bucket, rows, rows * 10)


def barrier(buckets: Buckets, checkpoint_id: int) -> dict[str, object]:
    for bucket in list(buckets.open):
        buckets.roll(bucket, checkpoint_id)
    return buckets.snapshot(checkpoint_id)


def test_files_become_visible_only_when_their_checkpoint_completes() -> None:
    files = Files()
    sink = Buckets.restore(0, ".parquet", None, files, run_id_of("job", "sink"))
    write(sink, files, "dt=2026-12-06/hour=10", 5)
    write(sink, files, "dt=2026-12-06/hour=11", 3)
    barrier(sink, 1)
    write(sink, files, "dt=2026-12-06/hour=11", 4)      # after the barrier: checkpoint 2
    assert files.visible() == {}
    sink.commit_up_to(1, files)
    assert sorted(files.visible().values()) == [3, 5]
    barrier(sink, 2)
    sink.commit_up_to(2, files)
    assert sum(files.visible().values()) == 12
    assert sink.commit_up_to(2, files) == []             # a repeated notification


def test_restore_commits_the_checkpoints_pending_files_and_discards_the_rest() -> None:
    files = Files()
    sink = Buckets.restore(0, ".parquet", None, files, run_id_of("job", "sink"))
    write(sink, files, "b", 5)
    state = barrier(sink, 1)             # checkpoint 1 completes, but the notification is lost
    write(sink, files, "b", 7)
    barrier(sink, 2)                     # checkpoint 2 never completes
    write(sink, files, "b", 9)           # in progress when the task died
    restored = Buckets.restore(0, ".parquet", state, files, "unused")
    assert files.visible() == {"b/part-" + restored.run_id + "-0-0.parquet": 5}
    assert files.hidden_files(restored.prefix) == []     # rows of 2 and after: replayed
    write(restored, files, "b", 7)       # the replay reuses the next name, unused so far
    barrier(restored, 2)
    restored.commit_up_to(2, files)
    assert sorted(files.visible().values()) == [5, 7]
    # restoring the same state twice (a failure during the restore) commits nothing twice
    again = Buckets.restore(0, ".parquet", state, files, "unused")
    assert again.committed == 1 and sorted(files.visible().values()) == [5, 7]


def test_a_fresh_start_deletes_what_a_failed_first_attempt_left() -> None:
    files = Files()
    first = Buckets.restore(3, ".csv", None, files, run_id_of("job", "sink"))
    write(first, files, "", 4)
    second = Buckets.restore(3, ".csv", None, files, run_id_of("job", "sink"))
    assert files.files == {} and second.run_id == first.run_id


def test_other_subtasks_files_are_not_touched() -> None:
    files = Files()
    mine = Buckets.restore(0, ".csv", None, files, "run")
    theirs = Buckets.restore(1, ".csv", None, files, "run")
    write(theirs, files, "", 2)
    Buckets.restore(0, ".csv", mine.snapshot(0), files, "run")
    assert len(files.hidden_files(theirs.prefix)) == 1


def test_a_pending_file_that_vanished_is_an_error_naming_it() -> None:
    files = Files()
    sink = Buckets.restore(0, ".csv", None, files, "run")
    write(sink, files, "", 1)
    state = barrier(sink, 1)
    files.files.clear()
    with pytest.raises(FileNotFoundError, match=r"\.part-run-0-0\.csv\.inprogress is gone"):
        Buckets.restore(0, ".csv", state, files, "run")


def test_transitions_are_checked_and_snapshots_need_rolled_files() -> None:
    part = PartFile("", "x", PartFileState.IN_PROGRESS).to(PartFileState.PENDING)
    committed = part.to(PartFileState.COMMITTED)
    with pytest.raises(IllegalPartFileTransition):
        committed.to(PartFileState.PENDING)
    files = Files()
    sink = Buckets.restore(0, ".csv", None, files, "run")
    write(sink, files, "", 1)
    with pytest.raises(IllegalPartFileTransition, match="roll them first"):
        sink.snapshot(1)


def test_rolling_policy_by_size_age_and_inactivity() -> None:
    policy = RollingPolicy(max_part_bytes=100, rollover_interval_ms=60_000,
                           inactivity_ms=10_000)
    part = PartFile("", "x", PartFileState.IN_PROGRESS, nbytes=50, opened_ms=0)
    assert not policy.should_roll(part, 5_000, 1_000)
    assert policy.should_roll(part, 11_000, 1_000)          # inactive
    assert policy.should_roll(part, 60_000, 59_000)         # old
    assert policy.should_roll(PartFile("", "x", PartFileState.IN_PROGRESS, nbytes=100),
                              0, 0)                         # large
