"""CSV files as a source: byte ranges cut as Hadoop's text input format cuts them."""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.csv as pacsv

from yarnflow.core.estimates import Estimate, format_bytes
from yarnflow.core.fs import hosts_of_range
from yarnflow.core.operators.base import PlanError, require_columns
from yarnflow.core.operators.sources import SPLITS_PER_SUBTASK, FileSource

# Text read of a CSV input to learn its rows and Arrow bytes per byte.
CSV_SAMPLE_BYTES = 1 << 20


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
    _CACHES = (*FileSource._CACHES, "_samples")

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
        """The first CSV_SAMPLE_BYTES of a file, in whole lines (read once per source
        on the client: the schema and the estimate both look at it)."""
        samples: dict[str, bytes] = self.__dict__.setdefault("_samples", {})
        if uri not in samples:
            with self.inputs.filesystem(uri).open_input_stream(uri) as f:
                head: bytes = f.read(CSV_SAMPLE_BYTES)
            samples[uri] = head if len(head) >= size else head[:head.rfind(b"\n") + 1]
        return samples[uri]

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        """The columns and types parsed from the first file's sample, as the subtasks
        will parse them, projected on ``include_columns``."""
        files = self.files()
        try:
            _, schema = self._columns(*files[0])
        except pa.ArrowInvalid as err:
            raise PlanError(f"input {files[0][0]} cannot be read as CSV ({err})",
                            "check the file, or the read_csv options (delimiter, "
                            "column_names, skip_rows)") from None
        if schema is None:
            return None
        _, _, convert = self._options()
        if not convert.include_columns:
            return schema
        require_columns(schema, convert.include_columns, f"the CSV input {files[0][0]}")
        return pa.schema([schema.field(c) for c in convert.include_columns])

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
                            max_split_bytes: int) -> list[Any]:
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
