"""Sources: the JobMaster cuts the input into splits; subtasks ask for the next split
until none is left, so a fast subtask reads more than a slow one. A split carries the
hosts that store its bytes (HDFS block locations), and the JobMaster hands a subtask
the splits stored on its own host first (see ``appmaster/jobmaster/splits.py``)."""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from yarnflow.core.fs import FileSystemSettings, hosts_of_range
from yarnflow.core.estimates import UNKNOWN, Estimate, format_bytes
from yarnflow.core.operators.base import Operator, OperatorContext
from yarnflow.core.operators.files import BoundPaths, DataPathError, unreachable


# A split's largest size unless ``pipeline.source.split-size`` says otherwise (Spark's
# spark.sql.files.maxPartitionBytes).
DEFAULT_SPLIT_BYTES = 128 << 20
# Splits per subtask a source aims for, so that subtasks asking for the next split as
# they go end up with even shares.
SPLITS_PER_SUBTASK = 4
# Rows read of a dictionary-encoded string column to learn its decoded width.
SAMPLE_ROWS = 4096
# Text read of a CSV input to learn its rows and Arrow bytes per byte.
CSV_SAMPLE_BYTES = 1 << 20


class Source(Operator):
    num_inputs = 0

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Any]:
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
    """Consecutive row groups of one file, or ``rows`` (first row, count) of its one
    row group."""
    path: str
    row_groups: tuple[int, ...]
    hosts: tuple[str, ...] = ()
    rows: tuple[int, int] | None = None


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
    most of its bytes."""
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
        state.pop("_widths", None)
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
        return splits

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
        metadata = self._metadata(split.path)
        with self.inputs.filesystem(split.path).open_input(split.path) as f:
            batches = pq.ParquetFile(f, metadata=metadata, pre_buffer=True).iter_batches(
                batch_size=batch_rows, row_groups=list(split.row_groups), columns=self.columns)
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


@dataclass(frozen=True)
class CsvSegment:
    """The lines of one file that start within bytes ``[start, start + length)``, as
    Hadoop's text input format cuts a file; the whole file when ``length`` is None."""
    path: str
    start: int = 0
    length: int | None = None


@dataclass(frozen=True)
class CsvSplit:
    """Segments of one or more files (Hadoop's combined file splits), parsed with one
    set of column names and types for the whole input, so that every split yields
    the same schema."""
    segments: tuple[CsvSegment, ...]
    hosts: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    schema: pa.Schema | None = None


# A CSV file is cut into byte ranges no smaller than this.
MIN_CSV_SPLIT_BYTES = 64 << 10
# How far past a byte range its last line is looked for at a time.
_LINE_TAIL_BYTES = 64 << 10


def _lines_in_range(f: Any, start: int, length: int) -> bytes:
    """The bytes of the lines starting in ``[start, start + length)`` of a random-access
    file: a line that began before ``start`` belongs to the previous range, and the
    last line is read to its end even past the range."""
    if start > 0:
        data: bytes = f.read_at(length + 1, start - 1)   # the byte before: did a line end there?
        newline = data.find(b"\n")
        if newline < 0 or newline >= length:
            return b""                               # no line starts in this range
        data = data[newline + 1:]
    else:
        data = f.read_at(length, 0)
    if not data or data.endswith(b"\n"):
        return data
    position, tail = start + length, []
    while True:                                      # the last line, to its end
        chunk = f.read_at(_LINE_TAIL_BYTES, position)
        newline = chunk.find(b"\n")
        if newline >= 0:
            tail.append(chunk[:newline + 1])
            break
        tail.append(chunk)
        if len(chunk) < _LINE_TAIL_BYTES:
            break                                    # the file ended
        position += len(chunk)
    return data + b"".join(tail)


class CsvSource(FileSource):
    """The input's text (every file, end to end) cut into equal byte ranges: a multiple
    of the parallelism of them, SPLITS_PER_SUBTASK per subtask or more to keep each
    within ``max_split_bytes`` (and none under MIN_CSV_SPLIT_BYTES). Equal ranges in a
    multiple of the parallelism are what lets fair shares come out even in bytes, for
    a few large files and many small ones alike (a range spans files where it must).
    The column names and types are inferred once, from the first file's first
    CSV_SAMPLE_BYTES, as pyarrow infers them from a file's first block; a segment
    other than a file's first is parsed with them. A file whose values may hold
    newlines (``newlines_in_values``) or whose text is not UTF-8 is read whole, a file
    a split: a line boundary cannot be found from an arbitrary byte there."""
    suffix = ".csv"

    def __init__(self, path: str | os.PathLike[str] | list[Any], **read_options: Any) -> None:
        super().__init__(path)
        self.read_options = read_options

    def _options(self) -> tuple[Any, Any, Any]:
        return (self.read_options.get("read_options") or pacsv.ReadOptions(),
                self.read_options.get("parse_options") or pacsv.ParseOptions(),
                self.read_options.get("convert_options") or pacsv.ConvertOptions())

    def _splittable(self) -> bool:
        read, parse, _ = self._options()
        return not parse.newlines_in_values and \
            read.encoding.lower().replace("-", "") in ("utf8", "ascii")

    def _sample(self, uri: str, size: int) -> bytes:
        """The first CSV_SAMPLE_BYTES of a file, in whole lines."""
        with self.inputs.filesystem(uri).open_input_stream(uri) as f:
            head: bytes = f.read(CSV_SAMPLE_BYTES)
        return head if len(head) >= size else head[:head.rfind(b"\n") + 1]

    def _columns(self, uri: str, size: int) -> tuple[tuple[str, ...], pa.Schema | None]:
        """Every column's name (``include_columns`` aside) and type, from a sample."""
        head = self._sample(uri, size)
        if not head:
            return (), None
        read, parse, convert = self._options()
        every = copy.copy(convert)
        every.include_columns = []
        table = pacsv.read_csv(pa.BufferReader(head), read_options=read, parse_options=parse,
                               convert_options=every)
        return tuple(table.column_names), table.schema

    def create_input_splits(self, parallelism: int,
                            max_split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Any]:
        files = self.files()
        names, schema = self._columns(*files[0])
        blocks: dict[str, list[Any]] = {}
        if not self._splittable() or schema is None:
            return [CsvSplit((CsvSegment(uri),), self._hosts(blocks, uri, 0, size), names, schema)
                    for uri, size in files]
        total = sum(size for _, size in files)
        p = max(parallelism, 1)
        pieces = max(SPLITS_PER_SUBTASK * p, -(-total // max(max_split_bytes, 1)))
        most = max(1, total // MIN_CSV_SPLIT_BYTES)
        pieces = min(-(-pieces // p) * p, most - most % p if most >= p else most)
        bounds = [total * k // pieces for k in range(pieces + 1)]
        splits, offset, index = [], 0, 0              # offset: where files[index] begins
        for lo, hi in zip(bounds, bounds[1:]):
            segments = []
            while lo < hi:
                uri, size = files[index]
                if lo >= offset + size:
                    offset, index = offset + size, index + 1
                    continue
                length = min(hi, offset + size) - lo
                segments.append(CsvSegment(uri, lo - offset, length))
                lo += length
            main = max(segments, key=lambda segment: segment.length or 0)
            splits.append(CsvSplit(tuple(segments),
                                   self._hosts(blocks, main.path, main.start, main.length or 0),
                                   names, schema))
        return splits

    def _hosts(self, blocks: dict[str, list[Any]], uri: str, start: int,
               length: int) -> tuple[str, ...]:
        """Where most of a range is stored; ``blocks`` keeps each file's block list."""
        if uri not in blocks:
            blocks[uri] = self.inputs.filesystem(uri).block_locations(uri)
        return hosts_of_range(blocks[uri], start, length)

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """Rows and Arrow bytes per byte of text, from the first CSV_SAMPLE_BYTES of the
        first file, scaled to all the text: CSV numbers are text, Arrow's are not."""
        files = self.files()
        total = sum(size for _, size in files)
        head = self._sample(*files[0])
        if not head:
            return Estimate(None, total, "CSV file sizes")
        sample = pacsv.read_csv(pa.BufferReader(head), **self.read_options)
        ratio = total / len(head)
        return Estimate(int(sample.num_rows * ratio), int(sample.nbytes * ratio),
                        f"a CSV sample of {format_bytes(len(head))}")

    def read_split(self, split: CsvSplit, batch_rows: int) -> Iterator[pa.RecordBatch]:
        read, parse, convert = self._options()
        if split.schema is not None:                 # one schema for every split
            convert = copy.copy(convert)
            convert.column_types = {field.name: field.type for field in split.schema}
        for segment in split.segments:
            yield from self._read_segment(segment, read, parse, convert, split.names)

    def _read_segment(self, segment: CsvSegment, read: Any, parse: Any, convert: Any,
                      names: tuple[str, ...]) -> Iterator[pa.RecordBatch]:
        if segment.start > 0:                        # no header, no rows to skip here
            read = copy.copy(read)
            read.column_names = list(names)
            read.autogenerate_column_names = False
            read.skip_rows = read.skip_rows_after_names = 0
        fs = self.inputs.filesystem(segment.path)
        if segment.length is None:
            with fs.open_input_stream(segment.path) as f:
                yield from pacsv.open_csv(f, read_options=read, parse_options=parse,
                                          convert_options=convert)
            return
        with fs.open_input(segment.path) as f:
            data = _lines_in_range(f, segment.start, segment.length)
        if data:
            yield from pacsv.open_csv(pa.BufferReader(data), read_options=read,
                                      parse_options=parse, convert_options=convert)


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
                            max_split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Any]:
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

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        assert self.table is not None
        return Estimate(self.table.num_rows, self.table.nbytes, "the in-memory table")

    def read_split(self, split: TableSplit, batch_rows: int) -> Iterator[pa.RecordBatch]:
        rows = pa.ipc.open_stream(split.ipc).read_all()
        return iter(rows.to_batches(max_chunksize=batch_rows))
