"""A directory watched for new files (Flink's ``FileSource.monitorContinuously``): an
unbounded source that needs no broker.

Every ``watch`` interval each subtask lists the directory (and its partition
directories) and takes the new files that are its own: a file belongs to the subtask
its path hashes to, so every file is read by exactly one subtask without a
coordinator. It reads them one at a time, in the order they appeared (modification
time, then name), a batch per poll. Files whose names start with ``.`` or ``_`` are
not read: writers that publish by renaming (Hadoop's, Spark's, yarnflow's own sinks)
are read only once a file is whole.

The source's state is the files read and, of the one being read, the batches
already emitted: a restore skips those and goes on from the next batch, so no row is
read twice into a checkpointed result or lost.
"""
from __future__ import annotations

import json
import logging
import zlib
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.fs as pafs
import pyarrow.json as pajson
import pyarrow.parquet as pq

from yarnflow.core.clock import SYSTEM_CLOCK
from yarnflow.core.fs import FileSystem, FileSystemSettings
from yarnflow.core.operators.base import PlanError
from yarnflow.core.operators.files import BoundPaths
from yarnflow.core.streaming.operators import (OperatorRestore, SnapshotResult, StreamContext,
                                               StreamSource)

log = logging.getLogger(__name__)

FORMATS = {"parquet": ".parquet", "csv": ".csv", "json": ".json"}


def owner_of(path: str, parallelism: int) -> int:
    return zlib.crc32(path.encode()) % parallelism


class WatchedDirectorySource(StreamSource):
    def __init__(self, path: str, file_format: str, interval_s: float,
                 schema: pa.Schema | None = None, uid: str = "") -> None:
        if file_format not in FORMATS:
            raise PlanError(f"format {file_format!r} cannot be watched",
                            f"use one of {', '.join(FORMATS)}")
        if interval_s <= 0:
            raise PlanError("watch must be a positive interval", "e.g. watch='10 s'")
        if file_format == "json" and schema is None:
            raise PlanError("a watched JSON directory needs its rows' schema",
                            "pass schema=pyarrow.schema([...])")
        self.inputs = BoundPaths(path)
        self.format = file_format
        self.interval_s = interval_s
        self.declared = schema
        self.uid = uid

    def bound(self, settings: FileSystemSettings) -> "WatchedDirectorySource":
        import copy
        bound = copy.copy(self)
        bound.inputs = self.inputs.bound(settings, "input")
        return bound

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        return self.declared

    def check_submittable(self) -> None:
        """The directory must exist (it may be empty: files come later)."""
        uri = self.inputs.resolved()[0]
        if not self.inputs.filesystem(uri).is_dir(uri):
            from yarnflow.core.failures import ContractError
            raise ContractError(f"the watched directory {uri} does not exist. Fix: create it "
                                "(files may come later), or name the right one")

    # --- running ----------------------------------------------------------------------------
    def setup(self, ctx: StreamContext, restored: OperatorRestore | None) -> None:
        super().setup(ctx, restored)
        self._uri = self.inputs.resolved()[0].rstrip("/")
        self._fs: FileSystem = self.inputs.filesystem(self._uri)
        self._done: set[str] = set()
        self._queue: list[str] = []
        self._current: str | None = None
        self._emitted = 0              # batches of the current file already emitted
        self._reader: Iterator[pa.RecordBatch] | None = None
        if restored is not None and restored.inline:
            body = json.loads(restored.inline)
            self._done = set(body["done"])
            if body.get("current"):
                self._current, self._emitted = body["current"], int(body["emitted"])
        self._next_listing = 0.0

    def splits(self) -> list[str]:
        return [self._current] if self._current else []

    def _list(self) -> None:
        base = self._fs.path(self._uri)
        try:
            entries = self._fs.arrow.get_file_info(pafs.FileSelector(base, recursive=True))
        except FileNotFoundError:
            entries = []
        known = self._done | set(self._queue) | ({self._current} if self._current else set())
        fresh = []
        for entry in entries:
            if entry.type != pafs.FileType.File:
                continue
            relative = entry.path[len(base):].lstrip("/")
            if any(part.startswith((".", "_")) for part in relative.split("/")):
                continue
            uri = self._fs.uri(entry.path)
            if uri in known or owner_of(relative, self.ctx.parallelism) != self.ctx.subtask_index:
                continue
            fresh.append((entry.mtime_ns or 0, uri))
        self._queue.extend(uri for _, uri in sorted(fresh))
        self._next_listing = SYSTEM_CLOCK.monotonic() + self.interval_s

    def _open(self, uri: str) -> Iterator[pa.RecordBatch]:
        rows = self.ctx.batch_rows
        stream = self._fs.open_input(uri) if self.format == "parquet" \
            else self._fs.open_input_stream(uri)
        if self.format == "parquet":
            batches: Iterator[pa.RecordBatch] = pq.ParquetFile(stream).iter_batches(
                batch_size=rows)
            return batches
        if self.format == "csv":
            options = pacsv.ConvertOptions(column_types=self.declared) if self.declared else None
            return iter(pacsv.open_csv(stream, convert_options=options))
        table = pajson.read_json(stream, parse_options=pajson.ParseOptions(
            explicit_schema=self.declared, unexpected_field_behavior="ignore"))
        return iter(table.to_batches(max_chunksize=rows))

    def poll(self, timeout: float) -> list[tuple[str, pa.RecordBatch]] | None:
        if self._reader is None:
            if self._current is None:
                if not self._queue and SYSTEM_CLOCK.monotonic() >= self._next_listing:
                    self._list()
                if not self._queue:
                    SYSTEM_CLOCK.sleep(min(timeout, max(0.0, self._next_listing - SYSTEM_CLOCK.monotonic())))
                    return []
                self._current, self._emitted = self._queue.pop(0), 0
            self._reader = self._open(self._current)
            for _ in range(self._emitted):      # restored mid-file: skip what was emitted
                next(self._reader, None)
        assert self._current is not None
        batch = next(self._reader, None)
        if batch is None:
            self._done.add(self._current)
            self._current, self._reader, self._emitted = None, None, 0
            return []
        self._emitted += 1
        if self.declared is not None and self.format != "json":
            batch = batch.select(self.declared.names) if set(self.declared.names) <= set(
                batch.schema.names) else batch
        return [(self._current, batch)]

    def snapshot(self, checkpoint_id: int) -> SnapshotResult:
        return SnapshotResult(inline=json.dumps({
            "done": sorted(self._done), "current": self._current,
            "emitted": self._emitted}).encode())

    def lag(self) -> int:
        """Files found and not read yet."""
        return len(self._queue)

