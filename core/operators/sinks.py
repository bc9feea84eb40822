"""Sinks: where results go (Parquet, CSV or JSON files: ``formats.py``), one file per
subtask attempt (or per partition it received rows of) in the job's staging
directory. How the output then becomes visible all at once (staging, the lease, the
commit, recovery from a crash) is the committer's: ``output_commit.py``.
"""
from __future__ import annotations

import copy
import logging
import posixpath
from typing import Any, Sequence

import pyarrow as pa

from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.operators import partitions
from yarnflow.core.operators.base import (BatchProcessor, OneInputOperator, PlanError,
                                          require_columns)
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.operators.formats import FORMATS, FileFormat, FormatWriter
from yarnflow.core.operators.output_commit import MODES, DirectoryCommitter

__all__ = ["DirectoryCommitter", "FileSink", "MODES", "ParquetSink"]

log = logging.getLogger(__name__)



class FileSink(OneInputOperator):
    """Each subtask attempt writes one file of ``format`` into the job's staging
    directory, or with ``partition_by`` one per partition it received rows of, in
    Hive-style directories without those columns; the JobMaster commits the finished
    attempts' files (see DirectoryCommitter)."""
    # dt=.../hour=... directories from a time column: only an unbounded job's sink
    # makes them (core/streaming/file_sink.py)
    time_buckets: Any = None

    def __init__(self, path: str, mode: str = "errorifexists", file_format: str = "parquet",
                 partition_by: Sequence[str] = ()) -> None:
        if file_format not in FORMATS:
            raise ValueError(f"format {file_format!r} is not one of {', '.join(FORMATS)}")
        self.path = path
        self.format = FORMATS[file_format]
        self.partition_by = list(partition_by)
        self.committer = DirectoryCommitter(path, mode, self.format.suffix, partition_by)

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is not None and self.partition_by:
            require_columns(inputs[0], self.partition_by, "the sink's input")
            if len(inputs[0]) == len(set(self.partition_by)):
                raise PlanError("every column is a partition column: the files would hold "
                                "none", "partition by fewer columns")
        return inputs[0]

    def bound(self, settings: FileSystemSettings) -> "FileSink":
        bound = copy.copy(self)
        bound.committer = self.committer.bound(settings)
        return bound

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        produced = self.committer.attempt_file(ctx.job_id, ctx.subtask_index, ctx.attempt_id)
        if self.partition_by:
            return _Partitioned(self.committer, self.format, produced, self.partition_by,
                                self.committer.task_file(ctx.subtask_index))
        return _Writing(self.committer, self.format, produced)


class ParquetSink(FileSink):
    def __init__(self, path: str, mode: str = "errorifexists") -> None:
        super().__init__(path, mode, "parquet")


class _Writing(BatchProcessor):
    """One attempt's file, opened with its first batch (an attempt that got none writes
    none); a run that fails leaves no part of it behind."""

    def __init__(self, committer: DirectoryCommitter, file_format: FileFormat, temp: str) -> None:
        self._committer = committer
        self._format = file_format
        self._temp = temp
        self._writer: FormatWriter | None = None
        self._stream: Any = None

    def process(self, batch: Any) -> None:
        if self._writer is None:
            self._stream = self._committer.fs.open_output(self._temp)
            self._writer = self._format.writer(self._stream, batch.schema)
        self._writer.write_batch(batch)

    def finish(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        self._writer = None
        self._stream.close()
        self._stream = None

    def close(self) -> None:
        writer, stream = self._writer, self._stream
        self._writer = self._stream = None
        for closable in (writer, stream):
            try:
                if closable is not None:
                    closable.close()
            except Exception:  # noqa: BLE001 - the failure being raised already says what went wrong
                pass
        if writer is not None or stream is not None:
            try:
                self._committer.fs.delete(self._temp)
            except Exception:
                log.warning("could not remove %s", self._temp, exc_info=True)


class _Partitioned(BatchProcessor):
    """One attempt's directory: a file per partition, opened with its partition's first
    rows; a run that fails leaves none of them behind."""

    def __init__(self, committer: DirectoryCommitter, file_format: FileFormat, root: str,
                 columns: list[str], name: str) -> None:
        self._committer = committer
        self._format = file_format
        self._root = root
        self._columns = columns
        self._name = name
        self._files: dict[str, _Writing] = {}
        self._finished = False

    def process(self, batch: Any) -> None:
        if batch.num_rows == 0:
            return
        table = pa.Table.from_batches([batch])
        rest = table.drop_columns(self._columns)
        numbered = table.select(self._columns).append_column(
            "__yarnflow_row", pa.array(range(table.num_rows), pa.int64()))
        groups = numbered.group_by(self._columns, use_threads=False).aggregate(
            [("__yarnflow_row", "list")])
        rows = groups.column("__yarnflow_row_list").to_pylist()
        values = groups.select(self._columns).to_pylist()
        for value, taken in zip(values, rows):
            directory = partitions.directory(self._columns, [value[c] for c in self._columns])
            writer = self._files.get(directory)
            if writer is None:
                fs = self._committer.fs
                if not fs.exists(posixpath.dirname(self._root)):
                    raise FileNotFoundError(f"{posixpath.dirname(self._root)} is gone: the job "
                                            "was aborted")
                fs.mkdirs(f"{self._root}/{directory}")
                writer = self._files[directory] = _Writing(
                    self._committer, self._format, f"{self._root}/{directory}/{self._name}")
            for piece in rest.take(pa.array(taken, pa.int64())).to_batches():
                writer.process(piece)

    def finish(self) -> None:
        for writer in self._files.values():
            writer.finish()
        self._finished = True

    def close(self) -> None:
        for writer in self._files.values():
            writer.close()
        if self._files and not self._finished:
            try:
                self._committer.fs.delete(self._root)
            except Exception:
                log.warning("could not remove %s", self._root, exc_info=True)
        self._files = {}
