"""Hive-style partitions (issue 56): a sink's partition_by writes ``col=value``
directories without those columns, committed whole (or appended); a Parquet source
finds them again as typed columns and reads only those its partition_filter selects."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from yarnflow.conf import options
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.operators import partitions
from yarnflow.core.operators.base import PlanError
from yarnflow.core.operators.sinks import FileSink
from yarnflow.core.operators.sources import ParquetSource
from tests.unit.fakes import TestingOperatorContext as Context

SPLIT_SIZE = options.SOURCE_SPLIT_SIZE.default      # pipeline.source.split-size

ROWS = pa.table({"day": pa.array([1, 1, 2, None, 3] * 4, pa.int64()),
                 "country": ["NL", "a/b=c", "NL", "DE", "NL"] * 4,
                 "v": pa.array(range(20), pa.int64())})


def test_directory_names_escape_values_and_name_nulls_as_hive_does():
    name = partitions.directory(["day", "c"], [None, "a/b=c"])
    assert name == "day=__HIVE_DEFAULT_PARTITION__/c=a%2Fb%3Dc"
    assert partitions.values_of("/out", f"/out/{name}/part-0.parquet") == \
        [("day", None), ("c", "a/b=c")]
    assert partitions.values_of("/out", "/out/other/part-0.parquet") is None
    assert partitions.values_of("/out", "/out/part-0.parquet") == []


def test_partition_values_are_typed_as_spark_infers_them():
    found = [[("a", "1"), ("b", "1.5"), ("c", "x")], [("a", None), ("b", "2"), ("c", "7")]]
    schema = partitions.infer_schema(found)
    assert [(f.name, f.type) for f in schema] == \
        [("a", pa.int64()), ("b", pa.float64()), ("c", pa.string())]
    assert partitions.typed(found[1], schema) == (None, 2.0, "7")
    with pytest.raises(ValueError, match="partition directories differ"):
        partitions.infer_schema([[("a", "1")], [("b", "1")]])


def write(tmp_path, job, mode="errorifexists", subtasks=2):
    sink = FileSink(str(tmp_path / "out"), mode, partition_by=["day", "country"]) \
        .bound(FileSystemSettings())
    sink.schema([ROWS.schema])
    sink.committer.check_submittable()
    sink.committer.setup(job, 50.0)
    for subtask in range(subtasks):
        ctx = Context(ROWS.slice(subtask * 10, 10).to_batches(max_chunksize=3))
        ctx.job_id, ctx.attempt_id, ctx.subtask_index = job, f"a{subtask}", subtask
        sink.run(ctx)
    sink.committer.commit(job, {s: f"a{s}" for s in range(subtasks)})


def read(tmp_path, keep=None, columns=None):
    source = ParquetSource(str(tmp_path / "out"), columns, keep).bound(FileSystemSettings())
    schema = source.schema([])
    batches = [b for split in source.create_input_splits(2, SPLIT_SIZE)
               for b in source.read_split(split, 100)]
    return pa.Table.from_batches(batches, schema=schema)


def by_v(table):
    return sorted(table.to_pylist(), key=lambda r: r["v"])


def test_a_partitioned_write_reads_back_as_the_same_rows_with_typed_partition_columns(tmp_path):
    write(tmp_path, "j1")
    assert sorted(os.listdir(tmp_path)) == ["out"]
    files = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*.parquet"))
    assert "day=1/country=a%2Fb%3Dc/part-00000.parquet" in files and len(files) == 10
    assert pq.read_table(tmp_path / "out" / files[0]).column_names == ["v"]
    got = read(tmp_path)
    assert got.column_names == ["v", "day", "country"]
    assert by_v(got) == by_v(ROWS.select(["v", "day", "country"]))


def test_a_partition_filter_reads_only_the_partitions_it_selects(tmp_path):
    write(tmp_path, "j1")
    got = read(tmp_path, pc.field("day") >= 2, ["country", "v"])
    assert got.column_names == ["country", "v"]
    assert by_v(got) == by_v(ROWS.filter(pc.greater_equal(ROWS["day"], 2)).select(["country", "v"]))
    source = ParquetSource(str(tmp_path / "out"), None, lambda p: p["country"] == "DE") \
        .bound(FileSystemSettings())
    assert {f.split("/")[-3] for f, _ in source.files()} == {"day=__HIVE_DEFAULT_PARTITION__"}
    assert read(tmp_path, pc.field("day") > 99).num_rows == 0


def test_append_adds_partitioned_files_named_with_the_job(tmp_path):
    write(tmp_path, "j1", "append")
    write(tmp_path, "j2", "append", subtasks=1)
    assert len(read(tmp_path)) == 30
    assert (tmp_path / "out" / "day=2" / "country=NL" / "part-00000-j2.parquet").exists()


def test_a_sink_partitioned_by_every_column_or_a_missing_one_is_refused():
    with pytest.raises(PlanError, match="no column 'nope'"):
        FileSink("/tmp/x", partition_by=["nope"]).schema([ROWS.schema])
    with pytest.raises(PlanError, match="every column is a partition column"):
        FileSink("/tmp/x", partition_by=["day", "country", "v"]).schema([ROWS.schema])
