"""Sources: the JobMaster cuts the input into splits; subtasks ask for the next split
until none is left, so a fast subtask reads more than a slow one. A split carries the
hosts that store its bytes (HDFS block locations), and the JobMaster hands a subtask
the splits stored on its own host first (see ``appmaster/jobmaster/splits.py``)."""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from yarnflow.core.fs import FileSystemSettings, hosts_of_range
from yarnflow.core.estimates import UNKNOWN, Estimate
from yarnflow.core.operators.base import Operator, OperatorContext
from yarnflow.core.operators.files import BoundPaths, DataPathError, unreachable


# A Parquet split's largest size unless ``source.split-size`` says otherwise (Spark's
# spark.sql.files.maxPartitionBytes).
DEFAULT_SPLIT_BYTES = 128 << 20
# Splits per subtask a source aims for, so that subtasks asking for the next split as
# they go end up with even shares.
SPLITS_PER_SUBTASK = 4


class Source(Operator):
    num_inputs = 0

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Any]:
        raise NotImplementedError

    def read_split(self, split: Any, batch_rows: int) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        return UNKNOWN

    def run(self, ctx: OperatorContext) -> None:
        while not ctx.cancelled:
            split = ctx.next_split()
            if split is None:
                return
            for batch in self.read_split(split, ctx.batch_rows):
                ctx.emit(batch)


class FileSource(Source):
    """Files named by paths: a file, a directory (its files ending in ``suffix``) or a
    glob, on any file system ``yarnflow.core.fs`` opens."""
    suffix = ""

    def __init__(self, path: str | os.PathLike[str] | list[Any]) -> None:
        self.inputs = BoundPaths(path)

    @property
    def path(self) -> Any:
        return self.inputs.paths[0] if len(self.inputs.paths) == 1 else self.inputs.paths

    def bound(self, settings: FileSystemSettings) -> "FileSource":
        bound = copy.copy(self)
        bound.inputs = self.inputs.bound(settings, "input")
        return bound

    def files(self) -> list[tuple[str, int]]:
        """``(uri, size)`` of every input file; a missing input is the user's error."""
        found: list[tuple[str, int]] = []
        for uri in self.inputs.resolved():
            try:
                listed = self.inputs.filesystem(uri).list_files(uri, self.suffix)
            except FileNotFoundError:
                raise DataPathError(
                    f"input {uri} does not exist. Fix: check the path (a path without a "
                    f"scheme is on {self.inputs.settings.default_fs}); data for a cluster "
                    "must be on its file system (yarnflow fs put)") from None
            except PermissionError as err:
                raise DataPathError(f"input {uri} is not readable: {err}") from None
            except OSError as err:            # the NameNode or the store did not answer
                raise unreachable(uri, err) from None
            if not listed:
                raise DataPathError(f"input {uri} holds no {self.suffix or ''} files")
            found.extend(listed)
        return found


@dataclass(frozen=True)
class ParquetSplit:
    """Consecutive row groups of one file."""
    path: str
    row_groups: tuple[int, ...]
    hosts: tuple[str, ...] = ()


def _row_group_range(group: Any) -> tuple[int, int]:
    """Where a row group's column chunks lie in its file: (first byte, bytes)."""
    starts, size = [], 0
    for c in range(group.num_columns):
        column = group.column(c)
        start = column.data_page_offset
        if column.has_dictionary_page and column.dictionary_page_offset:
            start = min(start, column.dictionary_page_offset)
        starts.append(start)
        size += column.total_compressed_size
    return (min(starts) if starts else 0), size


class ParquetSource(FileSource):
    """Splits of consecutive row groups of a file, each about
    ``min(max_split_bytes, total bytes / (SPLITS_PER_SUBTASK x parallelism))`` (at
    least one row group), as Spark sizes file splits: small row groups share one read,
    and every subtask still gets several splits. A split is located on the hosts of
    the block holding most of its bytes."""
    suffix = ".parquet"

    def __init__(self, path: str | os.PathLike[str] | list[Any],
                 columns: list[str] | None = None) -> None:
        super().__init__(path)
        self.columns = columns

    def _metadata(self, uri: str) -> Any:
        """A file's footer, read once per task: a subtask reads several row groups of
        the files stored on its host, and on a remote file system every footer read
        is a round trip."""
        cache: dict[str, Any] = self.__dict__.setdefault("_footers", {})
        if uri not in cache:
            with self.inputs.filesystem(uri).open_input(uri) as f:
                cache[uri] = pq.read_metadata(f)
        return cache[uri]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_footers", None)        # read where the splits are read, not shipped
        return state

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Any]:
        files = self.files()
        target = min(max_split_bytes,
                     sum(size for _, size in files) // (SPLITS_PER_SUBTASK * max(parallelism, 1)))
        splits = []
        for uri, _ in files:
            meta = self._metadata(uri)
            blocks = self.inputs.filesystem(uri).block_locations(uri)
            groups: list[int] = []
            start = end = 0
            for g in range(meta.num_row_groups):
                g_start, g_size = _row_group_range(meta.row_group(g))
                if groups and g_start + g_size - start > target:
                    splits.append(ParquetSplit(uri, tuple(groups),
                                               hosts_of_range(blocks, start, end - start)))
                    groups = []
                if not groups:
                    start = g_start
                groups.append(g)
                end = g_start + g_size
            if groups:
                splits.append(ParquetSplit(uri, tuple(groups),
                                           hosts_of_range(blocks, start, end - start)))
        return splits

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """Rows and uncompressed bytes (of the projected columns) from the files'
        footers: close to the Arrow size, unlike the compressed file size."""
        rows = size = 0
        for uri, _ in self.files():
            meta = self._metadata(uri)
            rows += meta.num_rows
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                if self.columns is None:
                    size += group.total_byte_size
                else:
                    size += sum(group.column(c).total_uncompressed_size
                                for c in range(group.num_columns)
                                if group.column(c).path_in_schema.split(".")[0] in self.columns)
        return Estimate(rows, size)

    def read_split(self, split: ParquetSplit, batch_rows: int) -> Iterator[pa.RecordBatch]:
        # pre_buffer: the row group's column chunks in few large reads, which a remote
        # file system answers much faster than many small ones
        metadata = self._metadata(split.path)
        with self.inputs.filesystem(split.path).open_input(split.path) as f:
            yield from pq.ParquetFile(f, metadata=metadata, pre_buffer=True).iter_batches(
                batch_size=batch_rows, row_groups=list(split.row_groups), columns=self.columns)


@dataclass(frozen=True)
class CsvSplit:
    path: str
    hosts: tuple[str, ...] = ()


class CsvSource(FileSource):
    """One split per CSV file, read as a stream."""
    suffix = ".csv"

    def __init__(self, path: str | os.PathLike[str] | list[Any], **read_options: Any) -> None:
        super().__init__(path)
        self.read_options = read_options

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Any]:
        splits = []
        for uri, size in self.files():
            blocks = self.inputs.filesystem(uri).block_locations(uri)
            splits.append(CsvSplit(uri, hosts_of_range(blocks, 0, size)))
        return splits

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """CSV text is about as large as its Arrow form; rows are unknown until read."""
        return Estimate(None, sum(size for _, size in self.files()))

    def read_split(self, split: CsvSplit, batch_rows: int) -> Iterator[pa.RecordBatch]:
        with self.inputs.filesystem(split.path).open_input_stream(split.path) as f:
            yield from pacsv.open_csv(f, **self.read_options)


class TableSource(Source):
    """An in-memory Arrow table, cut into row ranges: SPLITS_PER_SUBTASK per subtask, or
    more to keep each within ``max_split_bytes``, so shares come out even."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Any]:
        rows = self.table.num_rows
        pieces = max(parallelism, 1) * SPLITS_PER_SUBTASK
        if max_split_bytes > 0:
            pieces = max(pieces, -(-self.table.nbytes // max_split_bytes))
        step = max(1, -(-rows // pieces))
        return [(start, min(step, rows - start)) for start in range(0, rows, step)]

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        return Estimate(self.table.num_rows, self.table.nbytes)

    def read_split(self, split: tuple[int, int], batch_rows: int) -> Iterator[pa.RecordBatch]:
        start, length = split
        return iter(self.table.slice(start, length).to_batches(max_chunksize=batch_rows))
