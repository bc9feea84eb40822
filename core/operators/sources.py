"""Sources: the JobMaster cuts the input into splits; subtasks ask for the next split
until none is left, so a fast subtask reads more than a slow one. A split carries the
hosts that store its bytes (HDFS block locations), and the JobMaster hands a subtask
the splits stored on its own host first (see ``appmaster/jobmaster/splits.py``)."""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from yarnflow.core.fs import FileSystemSettings, hosts_of_range
from yarnflow.core.estimates import UNKNOWN, Estimate
from yarnflow.core.operators.base import Operator, PlanError, require_columns
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.operators import partitions
from yarnflow.core.operators.files import BoundPaths, DataPathError, unreachable


# Splits per subtask a source aims for, so that subtasks asking for the next split as
# they go end up with even shares.
SPLITS_PER_SUBTASK = 4
# Rows read of a dictionary-encoded string column to learn its decoded width.
SAMPLE_ROWS = 4096


class Source(Operator):
    num_inputs = 0

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int) -> list[Any]:
        raise NotImplementedError

    def read_split(self, split: Any, batch_rows: int) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        return UNKNOWN

    def for_readers(self) -> "Source":
        """This source as its subtasks need it, once the JobMaster made the splits:
        itself, unless the splits carry what it holds."""
        return self

    def run(self, ctx: OperatorContext) -> None:
        while not ctx.cancelled:
            split = ctx.next_split()
            if split is None:
                return
            for batch in self.read_split(split, ctx.batch_rows):
                ctx.emit(batch)


class FileSource(Source):
    """Files named by paths: a file, a directory (its files ending in ``suffix``) or a
    glob, on any file system ``yarnflow.core.fs`` opens. What it learns of its files
    where it is planned (their listing, and what ``_CACHES`` names besides) it keeps
    for that one planning, and never ships: the JobMaster looks again."""
    suffix = ""
    _CACHES: tuple[str, ...] = ("_files",)

    def __init__(self, path: str | os.PathLike[str] | list[Any]) -> None:
        self.inputs = BoundPaths(path)

    @property
    def path(self) -> Any:
        return self.inputs.paths[0] if len(self.inputs.paths) == 1 else self.inputs.paths

    def bound(self, settings: FileSystemSettings) -> "FileSource":
        bound = copy.copy(self)
        bound.inputs = self.inputs.bound(settings, "input")
        return bound

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._CACHES}

    def files(self) -> list[tuple[str, int]]:
        """``(uri, size)`` of every input file, listed once (the client's check, the
        schema and the estimate all ask); a missing input is the user's error."""
        if "_files" not in self.__dict__:
            self.__dict__["_files"] = self._list_files()
        files: list[tuple[str, int]] = self.__dict__["_files"]
        return files

    def _list_files(self) -> list[tuple[str, int]]:
        found: list[tuple[str, int]] = []
        for uri in self.inputs.resolved():
            fs = self.inputs.filesystem(uri)
            found.extend(self._listing(uri, lambda u: fs.list_files(u, self.suffix)))
        return found

    def _listing(self, uri: str, lister: Callable[[str], list[tuple[str, int]]]
                 ) -> list[tuple[str, int]]:
        """``lister``'s files of one input path; what goes wrong, the user's error."""
        try:
            listed = lister(uri)
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
        return listed


@dataclass(frozen=True)
class ParquetSplit:
    """Consecutive row groups of one file, or ``rows`` (first row, count) of its one
    row group; the values of its partition directories, as columns of ``partitioning``."""
    path: str
    row_groups: tuple[int, ...]
    hosts: tuple[str, ...] = ()
    rows: tuple[int, int] | None = None
    partition: tuple[Any, ...] = ()
    partitioning: pa.Schema | None = None


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
    ``min(max_split_bytes, total bytes / (SPLITS_PER_SUBTASK x parallelism))``, as Spark
    sizes file splits: small row groups share one read, and every subtask still gets
    several splits. A row group larger than that is cut into row ranges, at most one
    per subtask: each range decodes the row group up to its end (pyarrow reads no
    partial row group), so a one-row-group file is read by every subtask instead of
    one, at some decoding cost. A split is located on the hosts of the block holding
    most of its bytes.

    A directory's files may sit in Hive-style partition directories (``partitions.py``):
    their values are columns after the files' own, and ``partition_filter`` leaves out
    the files of the partitions it does not select, unread."""
    suffix = ".parquet"
    # footers are read where the splits are read, not shipped
    _CACHES = (*FileSource._CACHES, "_footers", "_widths", "_all_files", "_partitions",
               "_partitioning")

    def __init__(self, path: str | os.PathLike[str] | list[Any],
                 columns: list[str] | None = None,
                 partition_filter: partitions.PartitionFilter | None = None) -> None:
        super().__init__(path)
        self.columns = columns
        self.partition_filter = partition_filter

    def _list_files(self) -> list[tuple[str, int]]:
        """The files of the partitions the filter selects (maybe none)."""
        everything = self._every_file()
        schema = self.partitioning()
        found: dict[str, tuple[Any, ...]] = self.__dict__["_partitions"]
        keep = partitions.selected([found[uri] for uri, _ in everything], schema,
                                   self.partition_filter)
        return [file for file, kept in zip(everything, keep) if kept]

    def _every_file(self) -> list[tuple[str, int]]:
        if "_all_files" in self.__dict__:
            cached: list[tuple[str, int]] = self.__dict__["_all_files"]
            return cached
        listed: list[tuple[str, int]] = []
        texts: dict[str, list[tuple[str, str | None]]] = {}
        for uri in self.inputs.resolved():
            fs = self.inputs.filesystem(uri)
            for file, size in self._listing(uri, lambda u: fs.list_tree(u, self.suffix)):
                pairs = partitions.values_of(fs.path(uri), fs.path(file))
                if pairs is not None:
                    listed.append((file, size))
                    texts[file] = pairs
        try:
            schema = partitions.infer_schema(list(texts.values()))
        except ValueError as err:
            raise DataPathError(f"input {self.path}: {err}. Fix: read each layout on its "
                                "own, or make the directories agree") from None
        self.__dict__["_partitioning"] = schema
        self.__dict__["_partitions"] = {f: partitions.typed(t, schema) for f, t in texts.items()}
        self.__dict__["_all_files"] = listed
        return listed

    def partitioning(self) -> pa.Schema:
        """The partition columns the input's directories name (none: a flat input)."""
        self._every_file()
        schema: pa.Schema = self.__dict__["_partitioning"]
        return schema

    def _metadata(self, uri: str) -> Any:
        """A file's footer, read once per task: a subtask reads several row groups of
        the files stored on its host, and on a remote file system every footer read
        is a round trip."""
        cache: dict[str, Any] = self.__dict__.setdefault("_footers", {})
        if uri not in cache:
            with self.inputs.filesystem(uri).open_input(uri) as f:
                cache[uri] = pq.read_metadata(f)
        return cache[uri]

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        """The first file's footer (which the estimate reads too), projected on
        ``columns``; a file that is not Parquet is refused here, not in every subtask."""
        uri = self._every_file()[0][0]
        try:
            schema = self._metadata(uri).schema.to_arrow_schema()
        except pa.ArrowInvalid as err:
            raise PlanError(f"input {uri} is not a Parquet file ({err})",
                            "point read_parquet at Parquet files (read_csv reads CSV)") from None
        schema = without_views(schema)
        whole = pa.schema([*schema, *(f for f in self.partitioning() if f.name not in schema.names)])
        if self.columns is None:
            return whole
        require_columns(whole, self.columns, f"the Parquet input {uri}")
        return pa.schema([whole.field(c) for c in self.columns])

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int) -> list[Any]:
        files = self.files()
        partitioning = self.partitioning()
        values: dict[str, tuple[Any, ...]] = self.__dict__["_partitions"]
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
                ranges = min(-(-g_size // max(target, 1)), max(parallelism, 1))
                if ranges > 1:                   # a large row group: row ranges of it
                    if groups:
                        splits.append(ParquetSplit(uri, tuple(groups),
                                                   hosts_of_range(blocks, start, end - start)))
                        groups = []
                    hosts = hosts_of_range(blocks, g_start, g_size)
                    rows = meta.row_group(g).num_rows
                    step = -(-rows // ranges)
                    splits.extend(ParquetSplit(uri, (g,), hosts, (first, min(step, rows - first)))
                                  for first in range(0, rows, step))
                    continue
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
        if not partitioning.names:
            return splits
        return [replace(split, partition=values[split.path], partitioning=partitioning)
                for split in splits]

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """Rows and Arrow bytes (of the projected columns), which is what the broadcast
        threshold is about: a column's encoded size is its Arrow size only when it is
        plain. A dictionary-encoded column is counted decoded: fixed-width ones by
        their width, strings by the width a sample of SAMPLE_ROWS values has (a
        low-cardinality string column is a few KB encoded and many MB in Arrow)."""
        rows = size = 0
        self.__dict__.pop("_widths", None)
        for uri, _ in self.files():
            meta = self._metadata(uri)
            rows += meta.num_rows
            schema = meta.schema.to_arrow_schema()
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                for c in range(group.num_columns):
                    column = group.column(c)
                    name = column.path_in_schema.split(".")[0]
                    if self.columns is None or name in self.columns:
                        size += self._arrow_bytes(uri, schema, column)
        sampled = sorted(self.__dict__.get("_widths", {}))
        return Estimate(rows, size, "Parquet footers" + (
            f"; {', '.join(sampled)} decoded from a sample" if sampled else ""))

    def _arrow_bytes(self, uri: str, schema: pa.Schema, column: Any) -> int:
        path = column.path_in_schema
        if "." in path or schema.get_field_index(path) < 0:
            return int(column.total_uncompressed_size)      # nested: as encoded
        kind = schema.field(path).type
        try:
            return int(-(-column.num_values * kind.bit_width // 8))   # fixed width
        except ValueError:
            pass
        if not any("DICTIONARY" in e for e in column.encodings):
            return int(column.total_uncompressed_size)      # plain: length + bytes, as Arrow
        return int(column.num_values * self._decoded_width(uri, path))

    def _decoded_width(self, uri: str, name: str) -> float:
        """Arrow bytes per value of a variable-width column, from the first SAMPLE_ROWS
        values of the first file read for it (once per source)."""
        widths: dict[str, float] = self.__dict__.setdefault("_widths", {})
        if name not in widths:
            with self.inputs.filesystem(uri).open_input(uri) as f:
                batches = pq.ParquetFile(f, metadata=self._metadata(uri)).iter_batches(
                    batch_size=SAMPLE_ROWS, row_groups=[0], columns=[name])
                sample = next(batches, None)
            widths[name] = sample.nbytes / sample.num_rows if sample and sample.num_rows else 0.0
        return widths[name]

    def read_split(self, split: ParquetSplit, batch_rows: int) -> Iterator[pa.RecordBatch]:
        # pre_buffer: the row group's column chunks in few large reads, which a remote
        # file system answers much faster than many small ones
        for batch in self._read_rows(split, batch_rows):
            plain = without_views(batch.schema)
            if plain is not batch.schema:
                batch = batch.cast(plain)
            yield batch if split.partitioning is None else \
                _with_partition(batch, split, self.columns)

    def _read_rows(self, split: ParquetSplit, batch_rows: int) -> Iterator[pa.RecordBatch]:
        metadata = self._metadata(split.path)
        columns = self.columns     # those of the files: a partition's are the split's
        if columns is not None and split.partitioning is not None:
            columns = [c for c in columns if c not in split.partitioning.names]
        with self.inputs.filesystem(split.path).open_input(split.path) as f:
            batches = pq.ParquetFile(f, metadata=metadata, pre_buffer=True).iter_batches(
                batch_size=batch_rows, row_groups=list(split.row_groups), columns=columns)
            if split.rows is None:
                yield from batches
                return
            first, count = split.rows
            position = 0
            for batch in batches:                  # skip to the range, stop after it
                lo, hi = max(first - position, 0), min(first + count - position, batch.num_rows)
                if lo < hi:
                    yield batch.slice(lo, hi - lo)
                position += batch.num_rows
                if position >= first + count:
                    return


_VIEWS = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def without_views(schema: pa.Schema) -> pa.Schema:
    """``schema`` with string and binary views as plain strings and binaries: files
    written with views (DataFusion's, tpchgen-cli's) hold columns most of pyarrow's
    kernels (sort, join keys) do not take. ``schema`` itself when it has none."""
    if not any(f.type in _VIEWS for f in schema):
        return schema
    return pa.schema([f.with_type(_VIEWS[f.type]) if f.type in _VIEWS else f for f in schema],
                     metadata=schema.metadata)


def _with_partition(batch: pa.RecordBatch, split: ParquetSplit,
                    columns: list[str] | None) -> pa.RecordBatch:
    """A file's rows with its partition's values as columns (a file that holds a
    column of the same name keeps its own)."""
    assert split.partitioning is not None
    arrays, names = list(batch.columns), list(batch.schema.names)
    for field_, value in zip(split.partitioning, split.partition):
        if field_.name not in names:
            arrays.append(pa.repeat(pa.scalar(value, field_.type), batch.num_rows))
            names.append(field_.name)
    out = pa.RecordBatch.from_arrays(arrays, names=names)
    return out.select(columns) if columns is not None else out


@dataclass(frozen=True)
class TableSplit:
    """Rows ``[start, start + count)`` of an in-memory table, carried in the split
    (Arrow IPC): the table travels once, to the JobMaster, and each subtask receives
    only the rows it reads instead of the whole table in its deployment."""
    start: int
    count: int
    ipc: bytes = field(repr=False, default=b"")


def _ipc(table: pa.Table) -> bytes:
    """A table slice as an Arrow IPC stream, which holds only the slice's bytes."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


class TableSource(Source):
    """An in-memory Arrow table, cut into row ranges: SPLITS_PER_SUBTASK per subtask, or
    more to keep each within ``max_split_bytes``, so shares come out even."""

    def __init__(self, table: pa.Table | None) -> None:
        self.table = table

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int) -> list[Any]:
        assert self.table is not None, "splits are made from the table, by the JobMaster"
        rows = self.table.num_rows
        pieces = max(parallelism, 1) * SPLITS_PER_SUBTASK
        if max_split_bytes > 0:
            pieces = max(pieces, -(-self.table.nbytes // max_split_bytes))
        step = max(1, -(-rows // pieces))
        return [TableSplit(start, min(step, rows - start),
                           _ipc(self.table.slice(start, min(step, rows - start))))
                for start in range(0, rows, step)]

    def for_readers(self) -> "TableSource":
        return TableSource(None)

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        return self.table.schema if self.table is not None else None

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        assert self.table is not None
        return Estimate(self.table.num_rows, self.table.nbytes, "the in-memory table")

    def read_split(self, split: TableSplit, batch_rows: int) -> Iterator[pa.RecordBatch]:
        rows = pa.ipc.open_stream(split.ipc).read_all()
        return iter(rows.to_batches(max_chunksize=batch_rows))
