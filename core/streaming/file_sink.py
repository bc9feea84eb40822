"""Files out of an unbounded job, exactly once (Flink's ``FileSink``): each subtask
writes hidden in-progress part files, rolls them at every barrier (and by size or
age), and renames them to their final names when the JobMaster says the checkpoint
completed. ``part_files.py`` holds the states; this is the operator that drives them
with real files.

``partition_by`` names columns that become Hive-style directories, as for a bounded
job; ``TimeBuckets`` makes ``dt=YYYY-MM-DD/hour=HH`` directories from a time column
(Flink's ``DateTimeBucketAssigner``), in UTC.
"""
from __future__ import annotations

import copy
import json
import posixpath
from dataclasses import dataclass
from typing import BinaryIO, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from yarnflow.core.fs import FileSystem, FileSystemSettings
from yarnflow.core.fs.opening import open_filesystem
from yarnflow.core.operators import partitions
from yarnflow.core.operators.base import PlanError, require_columns
from yarnflow.core.operators.formats import FORMATS, FormatWriter
from yarnflow.core.streaming.operators import OperatorRestore, SnapshotResult, StreamContext, StreamOperator
from yarnflow.core.streaming.part_files import Buckets, RollingPolicy, run_id_of


@dataclass(frozen=True)
class TimeBuckets:
    """``dt=…/hour=…`` directories from ``column`` (a timestamp), per hour or per day."""
    column: str
    granularity: str = "hour"

    def __post_init__(self) -> None:
        if self.granularity not in ("hour", "day"):
            raise ValueError("time buckets are per 'hour' or per 'day'")

    def directories(self, table: pa.Table) -> pa.Array:
        """Each row's directory (``dt=2026-01-01/hour=00``) from its time in UTC."""
        times = table.column(self.column)
        if not pa.types.is_timestamp(times.type):
            times = pc.cast(pc.cast(times, pa.int64()), pa.timestamp("ms", tz="UTC"))
        pattern = "dt=%Y-%m-%d/hour=%H" if self.granularity == "hour" else "dt=%Y-%m-%d"
        return pc.strftime(times, format=pattern).combine_chunks()


class _Store:
    """The part files' operations on the sink's directory (``PartFileStore``)."""

    def __init__(self, fs: FileSystem, root: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/")

    def uri(self, path: str) -> str:
        return f"{self.root}/{path}"

    def rename(self, src: str, dst: str) -> None:
        self.fs.rename(self.uri(src), self.uri(dst))

    def exists(self, path: str) -> bool:
        return self.fs.exists(self.uri(path))

    def delete(self, path: str) -> None:
        self.fs.delete(self.uri(path))

    def hidden_files(self, prefix: str) -> list[str]:
        base = self.fs.path(self.root)
        try:
            entries = self.fs.arrow.get_file_info(pafs.FileSelector(base, recursive=True))
        except FileNotFoundError:
            return []
        return [posixpath.relpath(e.path, base) for e in entries
                if e.type == pafs.FileType.File
                and posixpath.basename(e.path).startswith(f".{prefix}")]


class StreamingFileSink(StreamOperator):
    # its output becomes visible at checkpoints: the task waits for one after its input
    commits_at_checkpoints = True

    def __init__(self, path: str, file_format: str = "parquet",
                 partition_by: Sequence[str] = (), time_buckets: TimeBuckets | None = None,
                 rolling: RollingPolicy = RollingPolicy(), uid: str = "") -> None:
        if file_format not in FORMATS:
            raise ValueError(f"format {file_format!r} is not one of {', '.join(FORMATS)}")
        self.path = path
        self.format = FORMATS[file_format]
        self.partition_by = list(partition_by)
        self.time_buckets = time_buckets
        self.rolling = rolling
        self.uid = uid
        self.settings = FileSystemSettings()

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is not None:
            require_columns(inputs[0], self.partition_by, "the sink's input")
            if self.time_buckets is not None:
                require_columns(inputs[0], [self.time_buckets.column], "the sink's input")
            if self.partition_by and len(inputs[0]) == len(set(self.partition_by)):
                raise PlanError("every column is a partition column: the files would hold "
                                "none", "partition by fewer columns")
        return inputs[0]

    def bound(self, settings: FileSystemSettings) -> "StreamingFileSink":
        bound = copy.copy(self)
        bound.path = settings.resolve(self.path)
        bound.settings = settings
        return bound

    # --- running ------------------------------------------------------------------------
    def setup(self, ctx: StreamContext, restored: OperatorRestore | None) -> None:
        super().setup(ctx, restored)
        fs = open_filesystem(self.path, self.settings)
        fs.mkdirs(self.path)
        self._store = _Store(fs, self.path)
        state = json.loads(restored.inline) if restored is not None and restored.inline else None
        self._buckets = Buckets.restore(ctx.subtask_index, self.format.suffix, state,
                                        self._store, run_id_of(ctx.job_id, self.uid))
        self._writers: dict[str, tuple[BinaryIO, FormatWriter, float]] = {}

    def process(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        table = pa.Table.from_batches([batch])
        for bucket, rows in self._split(table):
            self._write(bucket, rows)

    def _split(self, table: pa.Table) -> list[tuple[str, pa.Table]]:
        if self.time_buckets is None and not self.partition_by:
            return [("", table)]
        parts: list[pa.Array] = []
        if self.time_buckets is not None:
            parts.append(self.time_buckets.directories(table))
        for column in self.partition_by:
            values = table.column(column).combine_chunks()
            texts = [partitions.directory([column], [v]) for v in values.to_pylist()]
            parts.append(pa.array(texts, pa.string()))
        names = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "/")
        data = table.drop_columns(self.partition_by) if self.partition_by else table
        out = []
        encoded = pc.dictionary_encode(names)
        for index, bucket in enumerate(encoded.dictionary.to_pylist()):
            mask = pc.equal(encoded.indices, index)
            out.append((str(bucket), data.filter(mask)))
        return out

    def _write(self, bucket: str, rows: pa.Table) -> None:
        now = self.ctx.now_ms()
        writer = self._writers.get(bucket)
        if writer is None:
            part = self._buckets.open_part(bucket, now)
            uri = self._store.uri(self._buckets.path(part, hidden=True))
            self._store.fs.mkdirs(posixpath.dirname(uri))
            stream = self._store.fs.open_output(uri)
            writer = (stream, self.format.writer(stream, rows.schema), now)
            self._writers[bucket] = writer
        stream, out, _ = writer
        for batch in rows.to_batches():
            out.write_batch(batch)
        self._writers[bucket] = (stream, out, now)
        self._buckets.wrote(bucket, rows.num_rows, rows.nbytes)
        if self.rolling.should_roll(self._buckets.open[bucket], now, now):
            self._roll(bucket)

    def _roll(self, bucket: str, checkpoint_id: int | None = None) -> None:
        stream, out, _ = self._writers.pop(bucket)
        out.close()
        stream.close()
        if checkpoint_id is None:
            self._buckets.roll(bucket)
        else:
            self._buckets.roll(bucket, checkpoint_id)

    def on_processing_time(self, now_ms: float) -> None:
        for bucket, (_, _, last) in list(self._writers.items()):
            if self.rolling.should_roll(self._buckets.open[bucket], now_ms, last):
                self._roll(bucket)

    def snapshot(self, checkpoint_id: int) -> SnapshotResult:
        for bucket in list(self._writers):
            self._roll(bucket, checkpoint_id)
        return SnapshotResult(inline=json.dumps(self._buckets.snapshot(checkpoint_id)).encode())

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        committed = self._buckets.commit_up_to(checkpoint_id, self._store)
        if committed:
            self.ctx.count("files-committed", len(committed))

    def close(self) -> None:
        for stream, out, _ in self._writers.values():
            try:
                out.close()
                stream.close()
            except Exception:  # noqa: BLE001 - an in-progress file; a restore deletes it
                pass
        self._writers = {}

