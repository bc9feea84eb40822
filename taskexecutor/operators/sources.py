"""Sources: the JobMaster cuts the input into splits; subtasks ask for the next split
until none is left, so a fast subtask reads more than a slow one."""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from yarnflow.planner.estimates import UNKNOWN, Estimate
from yarnflow.taskexecutor.operators.base import Operator, OperatorContext


class Source(Operator):
    num_inputs = 0

    def create_input_splits(self, parallelism: int) -> list[Any]:
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


def expand_paths(path: str | list[str], suffix: str) -> list[str]:
    """Files named by a path, a directory (all ``*suffix`` files in it) or a glob."""
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    files: list[str] = []
    for p in map(str, paths):
        if os.path.isdir(p):
            files.extend(sorted(glob.glob(os.path.join(p, f"*{suffix}"))))
        elif any(ch in p for ch in "*?["):
            files.extend(sorted(glob.glob(p)))
        elif os.path.exists(p):
            files.append(p)
        else:
            raise FileNotFoundError(f"input {p} does not exist; check the path (it is read on "
                                    "the cluster, so it must exist there)")
    if not files:
        raise FileNotFoundError(f"no {suffix} files found at {path}")
    return files


@dataclass(frozen=True)
class ParquetSplit:
    path: str
    row_group: int


class ParquetSource(Source):
    """One split per Parquet row group."""

    def __init__(self, path: str | list[str], columns: list[str] | None = None) -> None:
        self.path = path
        self.columns = columns

    def create_input_splits(self, parallelism: int) -> list[Any]:
        splits = []
        for file in expand_paths(self.path, ".parquet"):
            meta = pq.ParquetFile(file).metadata
            splits.extend(ParquetSplit(file, i) for i in range(meta.num_row_groups))
        return splits

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """Rows and uncompressed bytes (of the projected columns) from the files'
        footers: close to the Arrow size, unlike the compressed file size."""
        rows = size = 0
        for file in expand_paths(self.path, ".parquet"):
            meta = pq.read_metadata(file)
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
        return pq.ParquetFile(split.path).iter_batches(
            batch_size=batch_rows, row_groups=[split.row_group], columns=self.columns)


class CsvSource(Source):
    """One split per CSV file, read as a stream."""

    def __init__(self, path: str | list[str], **read_options: Any) -> None:
        self.path = path
        self.read_options = read_options

    def create_input_splits(self, parallelism: int) -> list[Any]:
        return expand_paths(self.path, ".csv")

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """CSV text is about as large as its Arrow form; rows are unknown until read."""
        return Estimate(None, sum(os.path.getsize(f) for f in expand_paths(self.path, ".csv")))

    def read_split(self, split: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
        reader = pacsv.open_csv(split, **self.read_options)
        for batch in reader:
            yield batch


class TableSource(Source):
    """An in-memory Arrow table, cut into row ranges (at least one per subtask)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def create_input_splits(self, parallelism: int) -> list[Any]:
        rows = self.table.num_rows
        pieces = max(parallelism, 1)
        step = max(1, -(-rows // pieces))
        return [(start, min(step, rows - start)) for start in range(0, rows, step)]

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        return Estimate(self.table.num_rows, self.table.nbytes)

    def read_split(self, split: tuple[int, int], batch_rows: int) -> Iterator[pa.RecordBatch]:
        start, length = split
        return iter(self.table.slice(start, length).to_batches(max_chunksize=batch_rows))
