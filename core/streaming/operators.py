"""The contract of an unbounded job's operators with the stream task that runs them
(Flink's ``StreamOperator`` and ``SourceReader``), beside the batch contract of
``core/operators/context.py``.

A stream operator takes batches pushed to it, and watermarks after the task's valve
combined its inputs'; it emits through its context. At a checkpoint's barrier the task
asks each operator of its chain, in order, for a snapshot: the synchronous part runs
in the task's thread and only captures (an Arrow table is immutable, so capturing it
is taking a reference; a file sink closes its open files); what it returns is then
written to the checkpoint's directory on another thread while processing goes on
(Flink's asynchronous snapshot), and the task acknowledges once every part is written.
When the JobMaster says the checkpoint completed, each operator hears it (a file sink
commits, a Kafka source commits its offsets to the consumer group).

A restore gives each operator what its uid's snapshot held: inline bytes, and the
files of every subtask of that uid, so an operator whose state is keyed takes the rows
of its own key groups from all of them (the same code serves the next issue's
rescaling).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import pyarrow as pa

from yarnflow.core.fs import FileSystem
from yarnflow.core.jobgraph import ChainingStrategy
from yarnflow.core.operators.base import BatchProcessor, OneInputOperator, Operator
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.streaming.key_groups import KeyGroupRange


@dataclass(frozen=True)
class OperatorRestore:
    """What a restored operator gets of its uid's snapshot: its own subtask's inline
    bytes, and every subtask's files (full URIs)."""
    inline: bytes
    files: tuple[str, ...]
    fs: FileSystem | None = None

    def read_tables(self) -> list[pa.Table]:
        out = []
        for uri in self.files:
            assert self.fs is not None
            with self.fs.open_input(uri) as f:
                out.append(pa.ipc.open_file(f).read_all())
        return out


@dataclass
class SnapshotResult:
    """An operator's part of a checkpoint: inline bytes now, and files written by
    ``write`` (called on the uploading thread) into ``directory``; their names,
    relative to the checkpoint's directory, and their size come back."""
    inline: bytes = b""
    write: Callable[[], tuple[tuple[str, ...], int]] | None = None
    names: tuple[str, ...] = field(default=())


def table_snapshot(ctx: "StreamContext", uid: str, table: pa.Table,
                   inline: bytes = b"") -> SnapshotResult:
    """A keyed operator's state as one Arrow file of the checkpoint, written on the
    uploading thread (``table`` is immutable: capturing it is the synchronous part)."""
    fs, uri, name = ctx.snapshot_file(f"{uid}-{ctx.subtask_index}.arrow")

    def write() -> tuple[tuple[str, ...], int]:
        with fs.open_output(uri) as out:
            with pa.ipc.new_file(out, table.schema) as writer:
                writer.write_table(table)
        return (name,), table.nbytes
    return SnapshotResult(inline=inline, write=write)


class StreamContext(Protocol):
    subtask_index: int
    parallelism: int
    max_parallelism: int
    vertex_name: str
    job_id: str
    batch_rows: int
    key_groups: KeyGroupRange

    def emit(self, data: pa.RecordBatch | pa.Table) -> None: ...
    def now_ms(self) -> float:
        """Processing time: the wall clock, in milliseconds."""
    def current_watermark(self) -> int: ...
    def count(self, name: str, value: int = 1) -> None:
        """An operator's counter (late records dropped, records skipped)."""
    def snapshot_file(self, name: str) -> tuple[FileSystem, str, str]:
        """Where to write a file of the checkpoint being taken: the file system, the
        full URI, and the name relative to the checkpoint's directory."""


class NeedsAStreamTask(RuntimeError):
    def __init__(self, what: str) -> None:
        super().__init__(f"{what} runs only in a streaming job's task "
                         "(execution.runtime-mode: streaming)")


class StreamOperator(OneInputOperator):
    """One input, pushed; it plans and chains as a batch operator does (a stateless
    batch operator runs in a stream task as it is). ``uid`` files its state in a
    snapshot."""
    uid: str = ""

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        raise NeedsAStreamTask(type(self).__name__)

    def setup(self, ctx: StreamContext, restored: OperatorRestore | None) -> None:
        self.ctx = ctx

    def process(self, batch: pa.RecordBatch) -> None:
        raise NotImplementedError

    def on_watermark(self, watermark: int) -> None:
        """Event time reached ``watermark``; the task forwards it after this returns."""

    def on_processing_time(self, now_ms: float) -> None:
        """Called every so often (processing-time windows, rolling by age)."""

    def snapshot(self, checkpoint_id: int) -> SnapshotResult:
        return SnapshotResult()

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed on every task."""

    def finish(self) -> None:
        """The input ended (a bounded input inside a streaming job)."""

    def close(self) -> None:
        """The task ends, however it ends."""


class StreamSource(Operator):
    """A source of an unbounded job, polled by its task's loop. ``poll`` returns the
    batches read (each with the split it came from, for watermarks per split), an empty
    list when nothing came within ``timeout``, or None once a bounded source is done."""
    uid: str = ""
    num_inputs = 0
    bounded: bool = False
    # event time, set by assign_watermarks right after the source (None: no watermarks)
    watermarks: Any = None
    # how long a poll waits to fill a batch (execution.buffer-timeout; the planner's)
    buffer_timeout_s: float = 0.1

    def run(self, ctx: OperatorContext) -> None:
        raise NeedsAStreamTask(type(self).__name__)

    def setup(self, ctx: StreamContext, restored: OperatorRestore | None) -> None:
        self.ctx = ctx

    def poll(self, timeout: float) -> list[tuple[str, pa.RecordBatch]] | None:
        raise NotImplementedError

    def splits(self) -> list[str]:
        """The splits this subtask reads now (for watermarks per split)."""
        return []

    def snapshot(self, checkpoint_id: int) -> SnapshotResult:
        return SnapshotResult()

    def checkpoint_complete(self, checkpoint_id: int) -> None: ...

    def lag(self) -> int:
        """Records behind the end of the log (Kafka), -1 when unknown."""
        return -1

    def close(self) -> None: ...


def is_stream_operator(op: Any) -> bool:
    return isinstance(op, (StreamOperator, StreamSource))


class StreamUnion(StreamOperator):
    """``union`` on streams: a stream task reads all its inputs' channels as one, so a
    union passes each batch on as it comes; event time is the minimum over all of them
    (the task's watermark valve)."""
    chaining = ChainingStrategy.HEAD

    def __init__(self, num_inputs: int) -> None:
        self.num_inputs = num_inputs

    def process(self, batch: pa.RecordBatch) -> None:
        self.ctx.emit(batch)
