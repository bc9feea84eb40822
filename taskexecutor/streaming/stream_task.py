"""A subtask of an unbounded job (Flink's ``StreamTask`` and its mailbox).

One thread runs everything the subtask does, in order: it takes the next batch from
its source or from any input channel it is not holding back, pushes it through its
chain of operators, and between batches runs its mail: a checkpoint trigger (a
source task), a completed or aborted checkpoint, a processing-time tick. So an
operator never sees two calls at once, and a snapshot sees exactly the records
before its barrier.

Checkpoints, at a barrier (or a trigger, at a source): every operator of the chain
takes the synchronous part of its snapshot, the barrier goes on to every consumer,
and the asynchronous part (writing state files) runs on an uploader thread while
processing goes on; the JobMaster is then sent what each operator wrote. A
``terminate`` barrier (``yarnflow stop``) ends the task once that savepoint completes.

When every input has ended (a bounded source inside a streaming job), event time
jumps to its end, so every window fires; a chain that commits at checkpoints (a file
sink) then waits for one more checkpoint, which the coordinator triggers at tasks
whose producers have all finished (FLIP-147), before the task ends.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pyarrow as pa

from yarnflow.core.clock import SYSTEM_CLOCK
from yarnflow.core.errors import TaskCancelled
from yarnflow.core.fs import FileSystem
from yarnflow.core.fs.opening import open_filesystem
from yarnflow.core.memory import OperatorMemory
from yarnflow.core.operators.base import BatchProcessor, OneInputOperator
from yarnflow.core.operators.chain import ChainedOperator
from yarnflow.core.streaming.events import (
    MAX_WATERMARK, CancelCheckpoint, CheckpointBarrier, CheckpointKind, Watermark,
    WatermarkStatus)
from yarnflow.core.streaming.key_groups import KeyGroupRange, key_group_range
from yarnflow.core.streaming.operators import (
    OperatorRestore, SnapshotResult, StreamOperator, StreamSource)
from yarnflow.core.streaming.snapshots import (
    OperatorSubtaskState, SubtaskCheckpointMetrics, SubtaskRestore, encode_ack)
from yarnflow.core.streaming.watermarks import SplitWatermarks, WatermarkValve, event_times_ms
from yarnflow.taskexecutor.network.input_gate import channels_of
from yarnflow.taskexecutor.streaming.barrier_aligner import Abandoned, Aligned, BarrierAligner
from yarnflow.taskexecutor.streaming.stream_inputs import END, StreamChannel, StreamInputs
from yarnflow.taskexecutor.task import Task, _Context

log = logging.getLogger(__name__)

POLL_S = 0.05          # the longest a loop waits for data before it reads its mail
TICK_S = 0.2           # processing-time callbacks and source idleness, this often


def now_ms() -> float:
    return SYSTEM_CLOCK.time() * 1000.0


class _Stage:
    """One operator of the chain as the loop drives it: a stream operator, or a batch
    operator's processor (stateless: map, filter, select...)."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self.stream = op if isinstance(op, StreamOperator) else None
        self.processor: BatchProcessor | None = None
        self.process: Callable[[pa.RecordBatch], None] = self._unset

    @staticmethod
    def _unset(batch: pa.RecordBatch) -> None:
        raise RuntimeError("a chained operator was given a batch before it was opened")


class _StreamContext:
    """What a stream operator of this task may use (``StreamContext``)."""

    def __init__(self, task: "StreamTask", emit: Callable[[pa.RecordBatch | pa.Table], None]) -> None:
        self._task = task
        self._emit = emit
        info = task.tdd.info
        self.subtask_index = task.tdd.subtask_index
        self.parallelism = info.parallelism
        self.max_parallelism = task.max_parallelism
        self.vertex_name = info.vertex_name
        self.job_id: str = str(task.job_id)
        self.attempt_id = task.attempt_id
        self.batch_rows = info.batch_rows or task._services.batch_rows
        self.build_input = -1
        self.key_groups: KeyGroupRange = key_group_range(
            task.max_parallelism, info.parallelism, task.tdd.subtask_index)

    def emit(self, data: pa.RecordBatch | pa.Table) -> None:
        if isinstance(data, pa.Table):
            for batch in data.to_batches():
                self._emit(batch)
        elif data.num_rows:
            self._emit(data)

    def now_ms(self) -> float:
        return now_ms()

    def current_watermark(self) -> int:
        return self._task.watermark

    def count(self, name: str, value: int = 1) -> None:
        counters = self._task.metrics.counters     # replaced, not changed: reports copy it
        self._task.metrics.counters = {**counters, name: counters.get(name, 0) + value}

    def snapshot_file(self, name: str) -> tuple[FileSystem, str, str]:
        location = self._task.snapshot_location
        fs = open_filesystem(location, self._task._services.filesystem)
        fs.mkdirs(location)
        return fs, f"{location}/{name}", name

    def memory(self) -> OperatorMemory:
        return self._task.memory()


class StreamTask(Task):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_parallelism = self.tdd.info.max_parallelism or 128
        self._mail: deque[Callable[[], None]] = deque()
        self._mail_lock = threading.Lock()
        self._inputs: StreamInputs | None = None
        self._uploader = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"snapshot-{self.name}")
        self.watermark = -(1 << 63)
        self.snapshot_location = ""
        self._stages: list[_Stage] = []
        self._source: StreamSource | None = None
        self._terminate_id: int | None = None
        self._stop = False
        self._deferred_trigger: CheckpointBarrier | None = None
        self._inputs_ended = False
        self._final_id: int | None = None      # the checkpoint taken after the input ended
        self._last_snapshot = 0                 # the newest checkpoint snapshotted here

    # --- mail from the executor's main thread --------------------------------------------
    def _post(self, mail: Callable[[], None]) -> None:
        with self._mail_lock:
            self._mail.append(mail)
        if self._inputs is not None:
            self._inputs.wake()

    def trigger_checkpoint(self, barrier: Any) -> None:
        self._post(lambda: self._on_trigger(barrier))

    def notify_checkpoint(self, checkpoint_id: int, completed: bool) -> None:
        self._post(lambda: self._on_notified(checkpoint_id, completed))

    def _read_mail(self) -> None:
        while True:
            with self._mail_lock:
                if not self._mail:
                    return
                mail = self._mail.popleft()
            mail()

    # --- the loop ---------------------------------------------------------------------------
    def _invoke(self, operator: Any) -> None:
        ops = list(operator.operators) if isinstance(operator, ChainedOperator) else [operator]
        if isinstance(operator, ChainedOperator) and (
                any(i != len(ops) - 1 for i in (operator.routes or {}).values())
                or operator.parents != list(range(-1, len(ops) - 1))):
            raise RuntimeError(f"{self.name}: a streaming chain must be a line of operators")
        restore = SubtaskRestore.decode(self.tdd.restore)
        if restore is not None and restore.finished:
            log.info("%s had finished before checkpoint %d: it ends at once", self.name,
                     restore.checkpoint_id)
            return
        head = ops[0]
        if isinstance(head, StreamSource):
            self._source = head
            ops = ops[1:]
        self._stages = [_Stage(op) for op in ops]
        try:
            self._open(restore)
            if self._source is not None:
                self._run_source(self._source)
            else:
                self._run_inputs()
            self._end_of_input()
        finally:
            self._close()

    def _open(self, restore: SubtaskRestore | None) -> None:
        def restored(uid: str) -> OperatorRestore | None:
            if restore is None or uid not in restore.operators:
                return None
            inline, files = restore.operators[uid]
            fs = open_filesystem(files[0], self._services.filesystem) if files else None
            return OperatorRestore(inline, files, fs)
        # from the tail to the head: each operator's output goes to one already open
        downstream: Callable[[pa.RecordBatch | pa.Table], None] = self.emit
        for stage in reversed(self._stages):
            ctx = _StreamContext(self, downstream)
            if stage.stream is not None:
                stage.stream.setup(ctx, restored(stage.stream.uid))
                stage.process = stage.stream.process
            elif isinstance(stage.op, OneInputOperator):
                plain = _Context(self)
                plain.emit = ctx.emit    # type: ignore[method-assign]
                stage.processor = stage.op.open(plain)
                stage.process = stage.processor.process
            else:
                raise RuntimeError(f"{self.name}: {type(stage.op).__name__} cannot run in a "
                                   "streaming job's chain")
            downstream = self._feeder(stage)
        self._head_emit = downstream
        if self._source is not None:
            self._source.setup(_StreamContext(self, downstream), restored(self._source.uid))

    def _feeder(self, stage: _Stage) -> Callable[[pa.RecordBatch | pa.Table], None]:
        def feed(data: pa.RecordBatch | pa.Table) -> None:
            for batch in (data.to_batches() if isinstance(data, pa.Table) else [data]):
                if batch.num_rows:
                    stage.process(batch)
        return feed

    def _drain_outputs(self) -> bool:
        return self._terminate_id is None

    def _suspended(self) -> bool:
        """After a stop's barrier, until its savepoint completes: nothing more is read
        (Flink's synchronous savepoint), so nothing after the savepoint is processed."""
        if self._terminate_id is None:
            return False
        self._cancel.wait(POLL_S)
        return True

    def _stopping(self) -> bool:
        """A stop's savepoint completed (read after the mail, which may have said so)."""
        return self._stop

    def _check_cancelled(self) -> None:
        if self._cancel.is_set():
            raise TaskCancelled()

    def _run_source(self, source: StreamSource) -> None:
        strategy = source.watermarks
        marks = SplitWatermarks(strategy, now_ms) if strategy is not None else None
        splits: set[str] = set()
        next_tick = 0.0
        while not self._stop:
            self._check_cancelled()
            self._read_mail()
            if self._stopping():
                break
            if self._suspended():
                continue
            polled = source.poll(source.buffer_timeout_s)
            if polled is None:
                return
            if marks is not None:
                splits = self._track_splits(marks, splits, source.splits())
            for split, batch in polled:
                self.metrics.records_in += batch.num_rows
                self.metrics.bytes_in += batch.nbytes
                if marks is not None:
                    marks.on_records(split, event_times_ms(batch.column(strategy.column)))
                self._head_emit(batch)
            now = SYSTEM_CLOCK.monotonic()
            if marks is not None and (polled or now >= next_tick):
                splits = self._track_splits(marks, splits, source.splits())
                advanced, idle = marks.current()
                if idle is not None:
                    self._broadcast(WatermarkStatus(idle))
                if advanced is not None:
                    self._on_watermark(advanced)
            if now >= next_tick:
                self._tick()
                next_tick = now + TICK_S

    @staticmethod
    def _track_splits(marks: SplitWatermarks, known: set[str], now: list[str]) -> set[str]:
        """Splits the source reads now hold the watermark; one it finished (a file read
        to its end) holds nothing back any more."""
        current = set(now)
        for split in current - known:
            marks.add_split(split)
        for split in known - current:
            marks.remove_split(split)
        return current

    def _run_inputs(self) -> None:
        channels = [StreamChannel(g.input_index, c) for g in self.tdd.inputs
                    for c in channels_of(g, self.tdd.subtask_index)]
        self._inputs = StreamInputs(channels, self._services.data_address,
                                    self._services.partitions, self._services.clients,
                                    self.is_cancelled, self._services.partition_timeout)
        aligner = BarrierAligner(len(channels), now_ms)
        self._aligner = aligner
        valve = WatermarkValve(len(channels))
        ended = 0
        self._inputs.start()
        next_tick = 0.0
        try:
            while not self._stop and ended < len(channels):
                self._check_cancelled()
                self._read_mail()
                if self._suspended():
                    continue
                got = self._inputs.poll(POLL_S, aligner.is_blocked)
                now = SYSTEM_CLOCK.monotonic()
                if now >= next_tick:
                    self._tick()
                    next_tick = now + TICK_S
                if got is None:
                    continue
                channel, item = got
                if isinstance(item, pa.RecordBatch):
                    self.metrics.records_in += item.num_rows
                    self.metrics.bytes_in += item.nbytes
                    self._head_emit(item)
                elif isinstance(item, Watermark):
                    advanced = valve.input_watermark(channel, item.timestamp)
                    if advanced is not None:
                        self._on_watermark(advanced)
                elif isinstance(item, WatermarkStatus):
                    advanced, idle = valve.input_status(channel, item.idle)
                    if advanced is not None:
                        self._on_watermark(advanced)
                    if idle is not None:
                        self._broadcast(WatermarkStatus(idle))
                elif isinstance(item, CheckpointBarrier):
                    self._decide(aligner.on_barrier(channel, item))
                elif isinstance(item, CancelCheckpoint):
                    self._decide(aligner.on_cancel(item.checkpoint_id))
                elif item is END:
                    ended += 1
                    self._decide(aligner.on_end_of_input(channel))
                    advanced = valve.input_ended(channel)
                    if advanced is not None and advanced != MAX_WATERMARK:
                        self._on_watermark(advanced)
        finally:
            self._inputs.close()
        self._inputs_ended = ended == len(channels)

    def _decide(self, decisions: list[Aligned | Abandoned]) -> None:
        for decision in decisions:
            if isinstance(decision, Aligned):
                self._checkpoint(decision.barrier, decision.alignment_ms, decision.start_delay_ms)
            else:
                self._jm.decline_checkpoint(self.attempt_id, decision.checkpoint_id,
                                            decision.reason)
                self._broadcast(CancelCheckpoint(decision.checkpoint_id))

    def _end_of_input(self) -> None:
        """Every input ended (not a stop): event time ends, every window fires; then a
        chain that commits at checkpoints waits for its last one."""
        if self._stop:
            return
        self._on_watermark(MAX_WATERMARK)
        for stage in self._stages:
            if stage.stream is not None:
                stage.stream.finish()
            elif stage.processor is not None:
                stage.processor.finish()
        if not self._commits():
            return      # nothing left to commit: the coordinator counts a finished task done
        log.info("%s: input ended; waiting for the checkpoint that commits its output",
                 self.name)
        self._inputs_ended = True
        if self._deferred_trigger is not None:
            barrier, self._deferred_trigger = self._deferred_trigger, None
            self._checkpoint(barrier, 0.0, 0.0)
        while not self._stopping():
            self._check_cancelled()
            self._read_mail()
            if not self._stopping():
                self._cancel.wait(POLL_S)

    def _commits(self) -> bool:
        return any(getattr(s.stream, "commits_at_checkpoints", False) for s in self._stages)

    # --- events and time ----------------------------------------------------------------------
    def _on_watermark(self, watermark: int) -> None:
        self.watermark = watermark
        if watermark != MAX_WATERMARK:
            self.metrics.watermark = watermark
        for stage in self._stages:
            if stage.stream is not None:
                stage.stream.on_watermark(watermark)
        self._broadcast(Watermark(watermark))

    def _tick(self) -> None:
        now = now_ms()
        if self._source is not None:
            lag = self._source.lag()
            self.metrics.lag = lag if lag >= 0 else None
        for stage in self._stages:
            if stage.stream is not None:
                stage.stream.on_processing_time(now)

    def _broadcast(self, event: Any) -> None:
        for partition in self._partitions:
            partition.broadcast_event(event)

    # --- checkpoints ----------------------------------------------------------------------------
    def _on_trigger(self, barrier: CheckpointBarrier) -> None:
        if barrier.checkpoint_id <= self._last_snapshot:
            return      # a repeat, or it came with the barriers already
        if self._source is None and not self._inputs_ended:
            # a task whose producers all finished: its input may still be queued here;
            # the snapshot waits until it is read (or a barrier overtakes it)
            self._deferred_trigger = barrier
            return
        self._checkpoint(barrier, 0.0, max(0.0, now_ms() - barrier.timestamp_ms))

    def _checkpoint(self, barrier: CheckpointBarrier, alignment_ms: float,
                    start_delay_ms: float) -> None:
        if barrier.checkpoint_id <= self._last_snapshot:
            return      # taken already (its barriers and a direct trigger both came)
        self._last_snapshot = barrier.checkpoint_id
        started = SYSTEM_CLOCK.monotonic()
        self.snapshot_location = barrier.location
        parts: list[tuple[str, SnapshotResult]] = []
        try:
            operators = ([self._source] if self._source is not None else []) + \
                [s.stream for s in self._stages if s.stream is not None]
            for op in operators:
                if not op.uid:
                    raise RuntimeError(f"operator {type(op).__name__} of {self.name} has no uid")
                parts.append((op.uid, op.snapshot(barrier.checkpoint_id)))
        except Exception as err:  # noqa: BLE001 - the checkpoint is declined, the task goes on
            log.warning("%s: snapshot of checkpoint %d failed: %s", self.name,
                        barrier.checkpoint_id, err)
            self._jm.decline_checkpoint(self.attempt_id, barrier.checkpoint_id,
                                        f"{self.name}: {type(err).__name__}: {err}")
            return
        sync_ms = (SYSTEM_CLOCK.monotonic() - started) * 1000.0
        if self._inputs_ended and self._final_id is None:
            self._final_id = barrier.checkpoint_id
        self._broadcast(barrier)
        if barrier.kind is CheckpointKind.TERMINATE:
            self._terminate_id = barrier.checkpoint_id
        self._uploader.submit(self._upload, barrier.checkpoint_id, parts, sync_ms,
                              alignment_ms, start_delay_ms)

    def _upload(self, checkpoint_id: int, parts: list[tuple[str, SnapshotResult]],
                sync_ms: float, alignment_ms: float, start_delay_ms: float) -> None:
        started = SYSTEM_CLOCK.monotonic()
        try:
            states: dict[str, OperatorSubtaskState] = {}
            total = 0
            for uid, part in parts:
                files: tuple[str, ...] = ()
                size = len(part.inline)
                if part.write is not None:
                    files, written = part.write()
                    size += written
                states[uid] = OperatorSubtaskState(files, part.inline, size)
                total += size
        except Exception as err:  # noqa: BLE001 - declined: the coordinator aborts it
            log.warning("%s: writing checkpoint %d failed: %s", self.name, checkpoint_id, err)
            self._jm.decline_checkpoint(self.attempt_id, checkpoint_id,
                                        f"{self.name}: {type(err).__name__}: {err}")
            return
        metrics = SubtaskCheckpointMetrics(
            sync_ms=sync_ms, async_ms=(SYSTEM_CLOCK.monotonic() - started) * 1000.0,
            alignment_ms=alignment_ms, start_delay_ms=start_delay_ms, size=total)
        self._jm.acknowledge_checkpoint(self.attempt_id, checkpoint_id,
                                        encode_ack(states, metrics))

    def _on_notified(self, checkpoint_id: int, completed: bool) -> None:
        if not completed:
            if self._inputs is not None:
                self._decide(self._aligner.on_cancel(checkpoint_id))
            return
        if self._source is not None:
            self._source.checkpoint_complete(checkpoint_id)
        for stage in self._stages:
            if stage.stream is not None:
                stage.stream.checkpoint_complete(checkpoint_id)
        if self._terminate_id is not None and checkpoint_id >= self._terminate_id:
            self._stop = True
        elif self._final_id is not None and checkpoint_id >= self._final_id:
            self._stop = True       # the last checkpoint committed this task's output

    def _close(self) -> None:
        self._uploader.shutdown(wait=not self._cancel.is_set())
        if self._source is not None:
            self._source.close()
        for stage in self._stages:
            if stage.stream is not None:
                stage.stream.close()
            elif stage.processor is not None:
                stage.processor.close()
