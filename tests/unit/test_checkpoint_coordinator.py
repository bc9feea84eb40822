"""The CheckpointCoordinator on a manual clock: trigger, acknowledge, timeout, abort,
min-pause, max concurrent, tolerable failures, and the store it completes into."""
from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.unit.fakes import ManualMainThread, TestingCheckpointTasks
from yarnflow.appmaster.jobmaster.checkpoint.coordinator import (
    CheckpointCoordinator, CheckpointSettings, TriggerRefused)
from yarnflow.appmaster.jobmaster.checkpoint.failure_manager import CheckpointFailureReason
from yarnflow.appmaster.jobmaster.checkpoint.pending import (
    IllegalCheckpointTransition, PendingCheckpoint, PendingState)
from yarnflow.core.streaming.snapshots import OperatorSubtaskState, SubtaskCheckpointMetrics
from yarnflow.appmaster.jobmaster.checkpoint.store import CompletedCheckpointStore
from yarnflow.core.streaming.checkpoint_metadata import CheckpointFormatError, read_checkpoint
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.fs.opening import open_filesystem
from yarnflow.core.ids import ExecutionAttemptID
from yarnflow.core.streaming.events import CheckpointKind

A, B, C = ExecutionAttemptID("a"), ExecutionAttemptID("b"), ExecutionAttemptID("c")
METRICS = SubtaskCheckpointMetrics(sync_ms=1, async_ms=2, alignment_ms=3, size=10)


def inline(value: Any) -> Future[Any]:
    """Runs the file system's work at once, in the test's thread."""
    future: Future[Any] = Future()
    try:
        future.set_result(value())
    except Exception as err:  # noqa: BLE001 - as run_on_thread keeps it
        future.set_exception(err)
    return future


def settings(tmp_path: Path, **changes: Any) -> CheckpointSettings:
    base = dict(interval=10.0, timeout=60.0, min_pause=0.0, max_concurrent=1,
                tolerable_failures=0, directory=str(tmp_path), retained=2)
    base.update(changes)
    return CheckpointSettings(**base)   # type: ignore[arg-type]


def coordinator(tmp_path: Path, tasks: TestingCheckpointTasks, io: Callable[..., Any] = inline,
                **changes: Any) -> tuple[CheckpointCoordinator, ManualMainThread]:
    main = ManualMainThread()
    fs = open_filesystem(str(tmp_path), FileSystemSettings())
    store = CompletedCheckpointStore(fs, f"file://{tmp_path}/job-1", settings(tmp_path).retained)
    store.recover()
    coord = CheckpointCoordinator("job-1", settings(tmp_path, **changes), main, tasks, store, io)
    return coord, main


def ack_all(coord: CheckpointCoordinator, main: ManualMainThread, checkpoint_id: int,
            attempts: list[ExecutionAttemptID]) -> None:
    for attempt in attempts:
        main.execute(coord.acknowledge, attempt, checkpoint_id,
                     {f"uid-{attempt}": OperatorSubtaskState(inline=b"offsets", size=7)}, METRICS)


def test_periodic_trigger_sends_barriers_to_sources_only(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"], ["b"])
    coord, main = coordinator(tmp_path, tasks)
    main.execute(coord.start)
    main.advance(9.9)
    assert tasks.triggered == []
    main.advance(0.1)
    assert [(a, b.checkpoint_id) for a, b in tasks.triggered] == [(A, 1)]
    assert coord.pending_ids == [1]


def test_completes_when_every_task_acknowledged_and_notifies_them(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"], ["b"])
    coord, main = coordinator(tmp_path, tasks)
    result = main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    ack_all(coord, main, 1, [A])
    assert not result.done() and coord.pending_ids == [1]
    ack_all(coord, main, 1, [A])           # a repeat changes nothing
    assert coord.pending_ids == [1]
    ack_all(coord, main, 1, [B])
    completed = result.result(0)
    assert coord.pending_ids == []
    assert sorted(tasks.completed) == [(A, 1), (B, 1)]
    assert completed.operators["uid-a"].subtasks[0].inline == b"offsets"
    # the metadata is on the file system, written last, and reads back the same
    back = read_checkpoint(open_filesystem(str(tmp_path), FileSystemSettings()),
                           completed.location)
    assert back == completed
    assert coord.stats.as_json()["counts"]["completed"] == 1


def test_a_timeout_aborts_and_counts_past_the_tolerable_number(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"], ["b"])
    coord, main = coordinator(tmp_path, tasks, timeout=5.0, tolerable_failures=1)
    main.execute(coord.start)
    main.advance(10.0)                      # checkpoint 1 triggered
    ack_all(coord, main, 1, [A])            # b never answers
    main.advance(5.0)
    assert coord.pending_ids == []
    assert (A, 1) in tasks.aborted and (B, 1) in tasks.aborted
    assert tasks.failures == []             # one failure is tolerated
    assert "not acknowledged within 5 s by vertex-b (1/1)" in \
        coord.stats.latest_failed.failure   # type: ignore[union-attr]
    main.advance(5.0)                       # checkpoint 2, at 20 s
    main.advance(5.0)                       # ... expires too: two in a row
    assert len(tasks.failures) == 1 and "2 checkpoints failed in a row" in tasks.failures[0]


def test_a_completed_checkpoint_resets_the_failure_count(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"])
    coord, main = coordinator(tmp_path, tasks, tolerable_failures=1)
    main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    main.execute(coord.decline, A, 1, "snapshot failed: disk full")
    main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    ack_all(coord, main, 2, [A])
    main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    main.execute(coord.decline, A, 3, "snapshot failed again")
    assert tasks.failures == []
    main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    main.execute(coord.decline, A, 4, "and again")
    assert len(tasks.failures) == 1


def test_max_concurrent_and_min_pause_hold_triggers_back(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"])
    coord, main = coordinator(tmp_path, tasks, max_concurrent=2)
    main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    with pytest.raises(TriggerRefused) as refused:
        main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    assert refused.value.reason is CheckpointFailureReason.TOO_MANY_CONCURRENT
    # a savepoint is not held back
    main.call(coord.trigger, CheckpointKind.SAVEPOINT, f"file://{tmp_path}/sp")
    assert coord.pending_ids == [1, 2, 3]

    tasks2 = TestingCheckpointTasks(["a"])
    coord2, main2 = coordinator(tmp_path / "two", tasks2, min_pause=4.0, interval=1.0)
    main2.execute(coord2.start)
    main2.advance(1.0)                               # 1 triggered at 1 s
    ack_all(coord2, main2, 1, [A])                   # ... and completed at once
    main2.advance(3.9)                               # periodic attempts wait for the pause
    assert [b.checkpoint_id for _, b in tasks2.triggered] == [1]
    main2.advance(0.1)                               # 4 s after the end of 1
    assert [b.checkpoint_id for _, b in tasks2.triggered] == [1, 2]


def test_not_all_tasks_running_is_not_a_failure(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"])
    tasks.running = False
    coord, main = coordinator(tmp_path, tasks, interval=1.0)
    main.execute(coord.start)
    main.advance(5.0)
    assert tasks.triggered == [] and tasks.failures == []
    tasks.running = True
    main.advance(1.0)
    assert len(tasks.triggered) == 1


def test_a_later_completion_subsumes_an_earlier_pending_one(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"], ["b"])
    coord, main = coordinator(tmp_path, tasks, max_concurrent=2)
    first = main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    ack_all(coord, main, 2, [A, B])
    assert coord.pending_ids == []
    with pytest.raises(TriggerRefused):
        first.result(0)
    assert tasks.failures == [] and coord.stats.failed == 1


def test_retained_checkpoints_are_pruned_and_recovered_by_a_new_coordinator(
        tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"])
    coord, main = coordinator(tmp_path, tasks)
    for checkpoint_id in (1, 2, 3):
        main.call(coord.trigger, CheckpointKind.CHECKPOINT)
        ack_all(coord, main, checkpoint_id, [A])
    job_dir = tmp_path / "job-1"
    assert sorted(p.name for p in job_dir.iterdir()) == ["chk-2", "chk-3"]
    (job_dir / "chk-4").mkdir()             # triggered, never completed: no _metadata
    again, main2 = coordinator(tmp_path, TestingCheckpointTasks(["a"]))
    assert [c.checkpoint_id for c in again.store.all()] == [2, 3]
    assert not (job_dir / "chk-4").exists()
    assert main2.call(again.trigger, CheckpointKind.CHECKPOINT) is not None
    assert again.pending_ids == [4]         # ids go on after the latest completed


def test_a_failed_metadata_write_aborts_and_leaves_no_completed_checkpoint(
        tmp_path: Path) -> None:
    def failing(_: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_exception(PermissionError("denied"))
        return future
    tasks = TestingCheckpointTasks(["a"])
    coord, main = coordinator(tmp_path, tasks, io=failing, tolerable_failures=5)
    result = main.call(coord.trigger, CheckpointKind.CHECKPOINT)
    ack_all(coord, main, 1, [A])
    with pytest.raises(TriggerRefused, match="metadata could not be written.*denied"):
        result.result(0)
    assert coord.store.latest() is None and tasks.completed == []


def test_a_terminating_savepoint_ends_the_job_once_complete(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks(["a"])
    coord, main = coordinator(tmp_path, tasks)
    main.execute(coord.start)
    done = main.call(coord.trigger, CheckpointKind.TERMINATE, f"file://{tmp_path}/sp-1")
    ack_all(coord, main, 1, [A])
    savepoint = done.result(0)
    assert tasks.terminated == [savepoint]
    assert (tmp_path / "sp-1" / "_metadata").exists()
    assert coord.store.all() == []          # a savepoint is not a retained checkpoint
    main.advance(100.0)                     # and no checkpoint follows a stop
    assert len(tasks.triggered) == 1


def test_every_task_finished_completes_at_once(tmp_path: Path) -> None:
    tasks = TestingCheckpointTasks([], [])
    coord, main = coordinator(tmp_path, tasks)
    assert main.call(coord.trigger, CheckpointKind.CHECKPOINT).result(0).checkpoint_id == 1


def test_pending_checkpoint_transitions_are_checked() -> None:
    pending = PendingCheckpoint(1, CheckpointKind.CHECKPOINT, 0.0, 0.0, "x", {})
    pending.to(PendingState.ABORTED)
    with pytest.raises(IllegalCheckpointTransition):
        pending.to(PendingState.COMPLETED)


def test_metadata_of_a_newer_version_or_another_format_is_refused(tmp_path: Path) -> None:
    fs = open_filesystem(str(tmp_path), FileSystemSettings())
    (tmp_path / "sp").mkdir()
    (tmp_path / "sp" / "_metadata").write_text('{"format": "yarnflow-checkpoint", "version": 99}')
    with pytest.raises(CheckpointFormatError, match="newer yarnflow"):
        read_checkpoint(fs, f"file://{tmp_path}/sp")
    (tmp_path / "sp" / "_metadata").write_text("not json")
    with pytest.raises(CheckpointFormatError, match="not a checkpoint"):
        read_checkpoint(fs, f"file://{tmp_path}/sp")
    with pytest.raises(FileNotFoundError, match="no completed checkpoint"):
        read_checkpoint(fs, f"file://{tmp_path}/nothing")


def test_a_finished_task_brings_the_next_checkpoint_forward(tmp_path: Path) -> None:
    """A sink at the end of a bounded input waits for a checkpoint to commit: it is
    triggered when a task finishes, not an interval later."""
    tasks = TestingCheckpointTasks(["a"], ["b"])
    coord, main = coordinator(tmp_path, tasks, interval=3600.0)
    main.execute(coord.start)
    main.execute(coord.task_finished, A)
    main.advance(0.0)
    assert [b.checkpoint_id for _, b in tasks.triggered] == [1]
    main.execute(coord.task_finished, B)        # while 1 is pending: the next follows it
    main.advance(0.0)
    assert [b.checkpoint_id for _, b in tasks.triggered] == [1]
    ack_all(coord, main, 1, [A])
    main.advance(0.0)
    assert [b.checkpoint_id for _, b in tasks.triggered] == [1, 2]
