"""Result partitions: one per producing subtask and output, one subpartition per consumer.

PIPELINED subpartitions hold at most ``buffers-per-channel`` batches; a producer that
gets ahead of its consumer blocks (backpressure) instead of filling memory. BLOCKING
subpartitions are Arrow IPC files on local disk, served after the producer finished,
so a shuffle larger than memory still completes; or, with ``execution.batch.partition-
store: dfs``, files on the cluster file system (``partition_store.py``) that consumers
read without this executor.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path
from typing import Callable, Iterator, Protocol

import pyarrow as pa

from yarnflow.core.errors import TaskCancelled
from yarnflow.core.ids import JobID
from yarnflow.core.jobgraph import PartitionType, ShipStrategy
from yarnflow.core.streaming.events import Event
from yarnflow.taskexecutor.network.partitioner import Partitioner


class PartitionTimeout(Exception):
    pass


_END = object()


class PipelinedSubpartition:
    """Batches and, in a streaming job, the events between them (barriers, watermarks),
    in the order they were added. Only batches count against the capacity: an event
    waits its turn behind the batches before it, never for room."""

    def __init__(self, capacity: int) -> None:
        self._queue: deque[pa.RecordBatch | Event] = deque()
        self._batches = 0
        self._capacity = capacity
        self._cond = threading.Condition()
        self._finished = False
        self._released = False
        self._aborted = False      # released with data still unread
        self._drained = False      # a reader saw the end of the stream
        self.reader_attached = False

    def add(self, batch: pa.RecordBatch, cancelled: Callable[[], bool]) -> None:
        with self._cond:
            while self._batches >= self._capacity and not self._released:
                if cancelled():
                    raise TaskCancelled()
                self._cond.wait(0.2)
            if self._released:
                return
            self._queue.append(batch)
            self._batches += 1
            self._cond.notify_all()

    def add_event(self, event: Event) -> None:
        with self._cond:
            if not self._released:
                self._queue.append(event)
                self._cond.notify_all()

    def finish(self) -> None:
        with self._cond:
            self._finished = True
            self._cond.notify_all()

    def wait_consumed(self, cancelled: Callable[[], bool]) -> None:
        """Block until the consumer has read to the end of the stream: only then may the
        producer end and its partition go (a consumer that attaches late still finds it)."""
        with self._cond:
            while not self._drained and not self._released:
                if cancelled():
                    raise TaskCancelled()
                self._cond.wait(0.2)

    def read(self, cancelled: Callable[[], bool] = lambda: False) -> Iterator[pa.RecordBatch]:
        for item in self.read_items(cancelled):
            if isinstance(item, pa.RecordBatch):
                yield item

    def read_items(self, cancelled: Callable[[], bool] = lambda: False
                   ) -> Iterator[pa.RecordBatch | Event]:
        """Batches and events in order (a streaming consumer's read)."""
        with self._cond:
            self.reader_attached = True
        while True:
            with self._cond:
                while not self._queue and not self._finished and not self._released:
                    if cancelled():
                        raise TaskCancelled()
                    self._cond.wait(0.2)
                if self._queue:
                    batch = self._queue.popleft()
                    if isinstance(batch, pa.RecordBatch):
                        self._batches -= 1
                    self._cond.notify_all()
                elif self._aborted or not self._finished:
                    raise RuntimeError("the partition was released before it was fully read "
                                       "(its producer was cancelled or failed)")
                else:
                    self._drained = True
                    self._cond.notify_all()
                    return
            yield batch

    def release(self) -> None:
        with self._cond:
            self._released = True
            self._aborted = bool(self._queue) or not self._finished
            self._queue.clear()
            self._batches = 0
            self._cond.notify_all()


class BlockingSubpartition:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._writer: pa.ipc.RecordBatchFileWriter | None = None
        self._sink: pa.NativeFile | None = None
        self._finished = threading.Event()
        self.bytes_written = 0

    def add(self, batch: pa.RecordBatch, cancelled: Callable[[], bool]) -> None:
        if self._writer is None:
            self._sink = pa.OSFile(str(self._path), "wb")
            self._writer = pa.ipc.new_file(self._sink, batch.schema)
        self._writer.write_batch(batch)
        self.bytes_written += batch.nbytes

    def finish(self) -> None:
        if self._writer is not None:
            self._writer.close()
            assert self._sink is not None
            self._sink.close()
        self._finished.set()

    def wait_consumed(self, cancelled: Callable[[], bool]) -> None:
        return   # blocking data stays until the job releases it

    def read(self, cancelled: Callable[[], bool] = lambda: False) -> Iterator[pa.RecordBatch]:
        while not self._finished.wait(0.2):   # EAGER consumers wait for their producer
            if cancelled():
                raise TaskCancelled()
        if not self._path.exists():
            return
        # Read, not memory-mapped: each batch is in memory only while it is used, so a
        # partition larger than the executor's memory is read within it.
        with pa.OSFile(str(self._path), "rb") as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

    def release(self) -> None:
        try:
            os.remove(self._path)
        except FileNotFoundError:
            pass


class Subpartition(Protocol):
    """What a producer writes one consumer's share into."""

    def add(self, batch: pa.RecordBatch, cancelled: Callable[[], bool]) -> None: ...

    def finish(self) -> None: ...

    def wait_consumed(self, cancelled: Callable[[], bool]) -> None: ...

    def read(self, cancelled: Callable[[], bool] = ...) -> Iterator[pa.RecordBatch]: ...

    def release(self) -> None: ...


class ResultPartition:
    """What one subtask produces for one output edge."""

    def __init__(self, partition_id: str, job_id: JobID, result_id: str,
                 partition_type: PartitionType, ship: ShipStrategy, keys: tuple[str, ...],
                 num_subpartitions: int, subtask_index: int, capacity: int, spill_dir: Path,
                 on_first_data: Callable[[], None],
                 stored: "list[Subpartition] | None" = None, key_groups: int = 0) -> None:
        """``stored``: the subpartitions when the result goes to the cluster file system
        (``partition_store.StoredSubpartition``), instead of this executor's memory or disk."""
        self.partition_id = partition_id
        self.job_id = job_id
        self.result_id = result_id
        self.partition_type = partition_type
        self.partitioner = Partitioner(ship, keys, num_subpartitions, start=subtask_index,
                                       key_groups=key_groups)
        # Arrow bytes written to each subpartition: a finished producer reports them, and
        # adaptive execution sizes its consumers from them
        self.subpartition_bytes = [0] * num_subpartitions
        self._on_first_data = on_first_data
        self._has_data = False
        self._schema: pa.Schema | None = None       # the first batch's: the stream's
        self.stored = stored is not None
        if stored is not None:
            self.subpartitions: list[Subpartition] = stored
        elif partition_type is PartitionType.BLOCKING:
            spill_dir.mkdir(parents=True, exist_ok=True)
            safe = partition_id.replace("/", "_").replace(">", "_")
            self.subpartitions = [BlockingSubpartition(spill_dir / f"{safe}.{i}.arrow")
                                  for i in range(num_subpartitions)]
        else:
            self.subpartitions = [PipelinedSubpartition(capacity) for _ in range(num_subpartitions)]

    def emit(self, batch: pa.RecordBatch, cancelled: Callable[[], bool]) -> None:
        if self._schema is None:
            self._schema = batch.schema
        elif batch.schema is not self._schema and \
                not batch.schema.equals(self._schema, check_metadata=True):
            # a stream (an IPC file, a Flight stream) has one schema: the same columns
            # told apart by nullability or metadata (an operator's rows read back from
            # its spill files) take the first batch's
            batch = batch.cast(self._schema).replace_schema_metadata(self._schema.metadata)
        for target, piece in self.partitioner.split(batch):
            self.subpartitions[target].add(piece, cancelled)
            self.subpartition_bytes[target] += piece.nbytes
        if not self._has_data:
            self._has_data = True
            self._on_first_data()

    def broadcast_event(self, event: Event) -> None:
        """An event to every consumer, after the batches emitted before it."""
        for sub in self.subpartitions:
            if not isinstance(sub, PipelinedSubpartition):
                raise RuntimeError(f"{self.partition_id}: a streaming job's events need "
                                   "PIPELINED exchanges")
            sub.add_event(event)

    def finish(self) -> None:
        """The end of every subpartition's stream; an empty partition says it is
        consumable now, as one with data said at its first batch."""
        for sub in self.subpartitions:
            sub.finish()
        if not self._has_data:
            self._has_data = True
            self._on_first_data()

    def wait_consumed(self, cancelled: Callable[[], bool]) -> None:
        """Until every consumer has read its subpartition to the end (a pipelined one:
        only then may the producer end and its data go)."""
        for sub in self.subpartitions:
            sub.wait_consumed(cancelled)

    def release(self) -> None:
        for sub in self.subpartitions:
            sub.release()
