"""The file formats a sink writes: Parquet, CSV (with a header) and newline-delimited
JSON (Spark's ``json``: one object per line, as ``read_json`` and most tools read it).

A format opens a writer on an output stream for one attempt's file; the sink and its
committer (``sinks.py``, ``output_commit.py``) do not know which format they write.
"""
from __future__ import annotations

import datetime
import decimal
import json
import math
from typing import Any, BinaryIO, Protocol

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq


class FormatWriter(Protocol):
    def write_batch(self, batch: pa.RecordBatch) -> None: ...
    def close(self) -> None: ...


class FileFormat:
    name = ""
    suffix = ""

    def writer(self, stream: BinaryIO, schema: pa.Schema) -> FormatWriter:
        raise NotImplementedError


class ParquetFormat(FileFormat):
    name, suffix = "parquet", ".parquet"

    def writer(self, stream: BinaryIO, schema: pa.Schema) -> FormatWriter:
        writer: FormatWriter = pq.ParquetWriter(stream, schema)
        return writer


class CsvFormat(FileFormat):
    """pyarrow's CSV writer: a header line, then one line per row; nulls empty."""
    name, suffix = "csv", ".csv"

    def writer(self, stream: BinaryIO, schema: pa.Schema) -> FormatWriter:
        writer: FormatWriter = pacsv.CSVWriter(stream, schema)
        return writer


class JsonFormat(FileFormat):
    """One JSON object per row and line. Dates and times as ISO 8601 text, decimals as
    numbers, binary as text where it is UTF-8; NaN and infinities as null (JSON has no
    such numbers)."""
    name, suffix = "json", ".json"

    def writer(self, stream: BinaryIO, schema: pa.Schema) -> FormatWriter:
        return _JsonLines(stream)


class _JsonLines:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def write_batch(self, batch: pa.RecordBatch) -> None:
        lines = "".join(json.dumps(_plain(row), separators=(",", ":"), ensure_ascii=False,
                                   default=_jsonable) + "\n" for row in batch.to_pylist())
        self._stream.write(lines.encode("utf-8"))

    def close(self) -> None:
        """The stream is the sink's to close."""


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else None
    if isinstance(value, (datetime.date, datetime.time, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


FORMATS: dict[str, FileFormat] = {f.name: f for f in (ParquetFormat(), CsvFormat(), JsonFormat())}
