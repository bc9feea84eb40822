"""Paths resolve like Hadoop's tools resolve them, and an output commits, aborts and
recovers from a crash on the file system's own operations (here the local disk; the
YARN tests run the same code on HDFS)."""
from __future__ import annotations

import dataclasses
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from yarnflow.conf import options
from yarnflow.core.fs import (Block, FileSystemSettings, LocalPathRefused, hosts_of_range,
                              open_filesystem)
from yarnflow.core.operators.files import DataPathError
from yarnflow.core.operators.sinks import DirectoryCommitter

SPLIT_SIZE = options.SOURCE_SPLIT_SIZE.default      # pipeline.source.split-size

CLUSTER = FileSystemSettings(default_fs="hdfs://nn:9000", user="ana")


def test_paths_resolve_against_the_default_file_system_and_the_working_directory():
    assert CLUSTER.resolve("/data/x/") == "hdfs://nn:9000/data/x"
    assert CLUSTER.resolve("data/x") == "hdfs://nn:9000/user/ana/data/x"
    assert CLUSTER.resolve("hdfs:///data/x") == "hdfs://nn:9000/data/x"
    assert CLUSTER.resolve("hdfs://other:8020/x") == "hdfs://other:8020/x"
    assert CLUSTER.resolve("s3://bucket/key") == "s3://bucket/key"
    assert CLUSTER.resolve("file:/tmp/../tmp/x") == "file:///tmp/x"
    local = FileSystemSettings(working_dir="/work")
    assert local.resolve("data") == "file:///work/data"
    assert local.resolve("/abs") == "file:///abs"


def test_a_local_path_is_refused_on_a_cluster_unless_allowed():
    with pytest.raises(LocalPathRefused, match=r"input file:///tmp/x is a local path.*"
                       r"yarnflow fs put /tmp/x hdfs://nn:9000/tmp/x.*fs.allow-local-paths"):
        CLUSTER.check_reachable("file:///tmp/x", "input")
    FileSystemSettings(default_fs="hdfs://nn:9000", allow_local_paths=True).check_reachable(
        "file:///tmp/x", "input")
    FileSystemSettings().check_reachable("file:///tmp/x", "input")   # local default: fine


def test_the_namenodes_http_address_is_the_configured_one_or_port_9870_of_its_host():
    settings = FileSystemSettings(hdfs_http_addresses=(("nn:9000", "web:50070"),))
    assert settings.http_address("nn:9000") == "web:50070"
    assert settings.http_address("other:8020") == "other:9870"


def test_a_range_is_local_to_the_block_that_holds_most_of_it():
    blocks = [Block(0, 100, ("a",)), Block(100, 100, ("b",)), Block(200, 100, ("c",))]
    assert hosts_of_range(blocks, 90, 50) == ("b",)
    assert hosts_of_range(blocks, 0, 300) == ("a",)      # a tie: the first
    assert hosts_of_range([], 0, 10) == ()


def local_committer(tmp_path, mode: str = "errorifexists") -> DirectoryCommitter:
    committer = DirectoryCommitter(str(tmp_path / "out"), mode)
    committer = committer.bound(FileSystemSettings())
    return committer


def write_part(committer: DirectoryCommitter, job: str, subtask: int, attempt: str,
               rows: list[int]) -> None:
    with committer.fs.open_output(committer.attempt_file(job, subtask, attempt)) as out:
        pq.write_table(pa.table({"x": rows}), out)


def rows_of(path) -> list[int]:
    return sorted(pq.read_table(path).column("x").to_pylist())


def test_commit_keeps_only_the_finished_attempts_of_the_successful_run(tmp_path):
    committer = local_committer(tmp_path)
    committer.setup("j1", 50.0)
    write_part(committer, "j1", 0, "first", [1, 2])         # failed, then restarted
    write_part(committer, "j1", 0, "retry", [1, 2, 3])
    write_part(committer, "j1", 1, "frozen", [4])           # a zombie that woke up late
    write_part(committer, "j1", 1, "replacement", [5])
    assert not (tmp_path / "out").exists()
    committer.commit("j1", {0: "retry", 1: "replacement", 2: "read-no-rows"})
    assert sorted(os.listdir(tmp_path / "out")) == ["part-00000.parquet", "part-00001.parquet"]
    assert rows_of(tmp_path / "out") == [1, 2, 3, 5]
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_the_default_mode_refuses_an_existing_output_and_overwrite_replaces_it(tmp_path):
    (tmp_path / "out").mkdir()
    pq.write_table(pa.table({"x": [9]}), tmp_path / "out" / "old.parquet")
    with pytest.raises(DataPathError, match="already exists. Fix: .*mode='overwrite'.*mode='append'"):
        local_committer(tmp_path).check_submittable()
    committer = local_committer(tmp_path, "overwrite")
    committer.check_submittable()
    committer.setup("j1", 50.0)
    write_part(committer, "j1", 0, "a", [1])
    committer.commit("j1", {0: "a"})
    assert rows_of(tmp_path / "out") == [1]
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_append_adds_each_jobs_files_named_with_the_job_and_starts_a_missing_output(tmp_path):
    for job, rows in (("j1", [1]), ("j2", [2, 3]), ("j3", [4])):
        committer = local_committer(tmp_path, "append")
        committer.check_submittable()
        committer.setup(job, 50.0)
        write_part(committer, job, 0, "a", rows)
        committer.commit(job, {0: "a"})
    assert sorted(os.listdir(tmp_path / "out")) == \
        ["part-00000-j2.parquet", "part-00000-j3.parquet", "part-00000.parquet"]
    assert rows_of(tmp_path / "out") == [1, 2, 3, 4]
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_csv_and_json_sinks_write_their_format_and_suffix(tmp_path):
    import datetime
    import decimal
    import json
    from yarnflow.core.operators.sinks import FileSink
    from tests.unit.fakes import TestingOperatorContext as Context
    table = pa.table({"k": pa.array([1, None], pa.int64()), "s": ["a,b", None],
                      "d": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(9, 2)),
                      "day": [datetime.date(2024, 1, 2)] * 2, "x": [float("nan"), 2.5]})
    for file_format in ("csv", "json"):
        sink = FileSink(str(tmp_path / file_format), file_format=file_format).bound(FileSystemSettings())
        sink.committer.setup("j", 50.0)
        ctx = Context(table.to_batches(max_chunksize=1))
        ctx.job_id, ctx.attempt_id = "j", "a"
        sink.run(ctx)
        sink.committer.commit("j", {0: "a"})
    assert os.listdir(tmp_path / "csv") == ["part-00000.csv"]
    read = pa.csv.read_csv(tmp_path / "csv" / "part-00000.csv")
    assert read.column("s").to_pylist() == ["a,b", ""] and read.column("k").to_pylist() == [1, None]
    lines = (tmp_path / "json" / "part-00000.json").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"k": 1, "s": "a,b", "d": 1.5, "day": "2024-01-02", "x": None},
        {"k": None, "s": None, "d": None, "day": "2024-01-02", "x": 2.5}]
    with pytest.raises(ValueError, match="format 'xml' is not one of parquet, csv, json"):
        FileSink(str(tmp_path / "x"), file_format="xml")


def test_an_aborted_job_leaves_nothing_and_a_late_task_cannot_recreate_its_staging(tmp_path):
    committer = local_committer(tmp_path)
    committer.setup("j1", 50.0)
    committer.abort("j1")
    with pytest.raises(FileNotFoundError):
        committer.fs.open_output(committer.attempt_file("j1", 0, "late"))
    assert os.listdir(tmp_path) == []


def test_recovery_restores_an_output_whose_replacement_crashed_and_clears_staging(tmp_path):
    old = local_committer(tmp_path, "overwrite")
    old.setup("j0", 50.0)
    write_part(old, "j0", 0, "a", [7])
    old.commit("j0", {0: "a"})
    # job j1 crashed between its two renames: the old output aside, its own staged
    crashed = local_committer(tmp_path, "overwrite")
    crashed.setup("j1", 50.0)
    write_part(crashed, "j1", 0, "a", [1])
    os.rename(tmp_path / "out", tmp_path / ".out.yarnflow-replaced-j1")
    lapse(tmp_path / ".out.yarnflow-lease-j1" / "renewed", 60)
    # and job j2 died while writing
    (tmp_path / ".out.yarnflow-staging-j2" / "_temporary").mkdir(parents=True)
    nxt = local_committer(tmp_path, "overwrite")
    nxt.setup("j3", 50.0)
    assert rows_of(tmp_path / "out") == [7], "the old output was not put back"
    assert sorted(os.listdir(tmp_path)) == [".out.yarnflow-lease-j3",
                                            ".out.yarnflow-staging-j3", "out"]


def lapse(lease, seconds: float) -> None:
    """A lease last renewed ``seconds`` ago: its JobMaster crashed then."""
    stamped = os.stat(lease).st_mtime - seconds
    os.utime(lease, (stamped, stamped))


def test_a_second_job_writing_an_output_whose_lease_is_fresh_is_refused_and_leaves_nothing(
        tmp_path):
    first = local_committer(tmp_path, "overwrite")
    first.setup("j1", 50.0)
    write_part(first, "j1", 0, "a", [1])
    second = local_committer(tmp_path, "overwrite")
    with pytest.raises(DataPathError, match=r"output .*out is being written by job j1, whose "
                       r"JobMaster renewed its lease 0 s ago. Fix: wait for that job to end"):
        second.setup("j2", 50.0)
    assert sorted(os.listdir(tmp_path)) == [".out.yarnflow-lease-j1", ".out.yarnflow-staging-j1"]
    lapse(tmp_path / ".out.yarnflow-lease-j1" / "renewed", 30)
    first.renew("j1")                      # renewed in time: still refused
    with pytest.raises(DataPathError, match="being written by job j1"):
        second.setup("j2", 50.0)
    first.commit("j1", {0: "a"})           # the commit gives the lease up
    with pytest.raises(FileNotFoundError):
        first.renew("j1")                  # and a renewal too late cannot take it back
    assert sorted(os.listdir(tmp_path)) == ["out"]
    second.setup("j2", 50.0)
    write_part(second, "j2", 0, "a", [2])
    second.commit("j2", {0: "a"})
    assert rows_of(tmp_path / "out") == [2]


def test_a_lapsed_lease_is_a_crashed_job_whose_leftovers_the_next_job_clears(tmp_path):
    crashed = local_committer(tmp_path, "overwrite")
    crashed.setup("j1", 50.0)
    write_part(crashed, "j1", 0, "a", [1])
    lapse(tmp_path / ".out.yarnflow-lease-j1" / "renewed", 51)
    nxt = local_committer(tmp_path, "overwrite")
    nxt.setup("j2", 50.0)
    assert sorted(os.listdir(tmp_path)) == [".out.yarnflow-lease-j2", ".out.yarnflow-staging-j2"]
    nxt.abort("j2")
    assert os.listdir(tmp_path) == []


def test_a_lease_whose_yarn_application_ended_is_released_by_the_next_client_at_once(tmp_path):
    """A per-job application killed with its ApplicationMaster: once YARN says it
    ended, the client of the next run on that output releases its lease, and that
    run's setup clears the crashed job's staging instead of being refused for up to
    heartbeat.timeout. While YARN says it runs, the lease holds."""
    crashed = local_committer(tmp_path, "overwrite")
    crashed.setup("j1", 50.0, "application_1_0001")
    write_part(crashed, "j1", 0, "a", [1])
    asked: list[str] = []
    nxt = local_committer(tmp_path, "overwrite")
    assert nxt.release_ended(lambda app: bool(asked.append(app))) == []
    with pytest.raises(DataPathError, match="being written by job j1"):
        nxt.setup("j2", 50.0, "application_1_0002")
    assert nxt.release_ended(lambda app: bool(asked.append(app)) or True) == ["j1"]
    assert asked == ["application_1_0001", "application_1_0001"]
    nxt.setup("j2", 50.0, "application_1_0002")
    assert sorted(os.listdir(tmp_path)) == [".out.yarnflow-lease-j2", ".out.yarnflow-staging-j2"]


def test_a_lease_that_names_no_application_is_left_to_lapse(tmp_path):
    local = local_committer(tmp_path, "overwrite")
    local.setup("j1", 50.0)                           # off YARN: no application
    lease = tmp_path / ".out.yarnflow-lease-j1"
    assert local_committer(tmp_path).release_ended(lambda _: True) == []
    (lease / "renewed").write_bytes(b"j1")            # a lease of the first format
    assert local_committer(tmp_path).release_ended(lambda _: True) == []
    assert lease.exists()


def test_open_output_never_creates_parents(tmp_path):
    fs = open_filesystem(f"file://{tmp_path}", FileSystemSettings())
    with pytest.raises(FileNotFoundError):
        fs.open_output(f"file://{tmp_path}/missing/x")
    with pytest.raises(FileExistsError):
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        fs.rename(f"file://{tmp_path}/a", f"file://{tmp_path}/b")


def test_parquet_splits_pack_consecutive_row_groups_into_a_few_per_subtask(tmp_path):
    from yarnflow.core.operators.sources import ParquetSource
    pq.write_table(pa.table({"x": list(range(40_000))}), tmp_path / "a.parquet",
                   row_group_size=1000, compression="none")            # 40 row groups
    source = ParquetSource(str(tmp_path))
    source = source.bound(FileSystemSettings())
    splits = source.create_input_splits(2, SPLIT_SIZE)                  # ~8 splits
    groups = [g for split in splits for g in split.row_groups]
    assert groups == list(range(40)), "every row group exactly once, in order"
    assert 7 <= len(splits) <= 9
    # a row group above the split size is cut into row ranges, at most one per subtask
    assert len(source.create_input_splits(2, max_split_bytes=1)) == 80
    rows = [b.num_rows for s in splits for b in source.read_split(s, 10_000)]
    assert sum(rows) == 40_000


def test_a_one_row_group_parquet_file_is_cut_into_row_ranges_read_once_each(tmp_path):
    from yarnflow.core.operators.sources import ParquetSource
    pq.write_table(pa.table({"x": list(range(10_001))}), tmp_path / "one.parquet")
    source = ParquetSource(str(tmp_path)).bound(FileSystemSettings())
    splits = source.create_input_splits(4, SPLIT_SIZE)
    assert [s.rows for s in splits] == [(0, 2501), (2501, 2501), (5002, 2501), (7503, 2498)]
    values = [v for s in splits for b in source.read_split(s, 1000)
              for v in b.column(0).to_pylist()]
    assert values == list(range(10_001)), "every row once, in order"


def csv_rows(start: int, count: int) -> pa.Table:
    """Rows of uneven length (quoted commas too), so range ends fall mid-line."""
    return pa.table({"k": pa.array(range(start, start + count), pa.int64()),
                     "text": [f"row {i}, " + "x" * (i % 37) for i in range(start, start + count)],
                     "v": [i / 7 for i in range(start, start + count)]})


def test_csv_input_is_cut_into_equal_byte_ranges_that_yield_every_line_once(tmp_path):
    """Three files of very different sizes, four subtasks: 16 splits of equal bytes
    (some spanning two files), every line once, one schema."""
    import pyarrow.csv as pacsv
    from yarnflow.core.operators.csv_source import CsvSource
    counts = [30_000, 9_000, 1]                       # ~1.5 MB, ~0.4 MB, one row
    for i, count in enumerate(counts):
        pacsv.write_csv(csv_rows(i * 100_000, count), tmp_path / f"part-{i}.csv")
    total = sum(f.stat().st_size for f in tmp_path.iterdir())
    source = CsvSource(str(tmp_path)).bound(FileSystemSettings())
    splits = source.create_input_splits(4, SPLIT_SIZE)
    assert len(splits) == 16
    sizes = [sum(s.length for s in split.segments) for split in splits]
    assert sum(sizes) == total and max(sizes) - min(sizes) <= 1, sizes
    assert any(len(split.segments) > 1 for split in splits), "a range spans a file end"
    tables = [pa.Table.from_batches(list(source.read_split(s, 1000))) for s in splits]
    assert len({t.schema for t in tables if t.num_rows}) == 1, "one schema for every split"
    got = pa.concat_tables(t for t in tables if t.num_rows)
    want = pa.concat_tables(csv_rows(i * 100_000, n) for i, n in enumerate(counts))
    assert got.equals(want.cast(got.schema)), "every line once, in order"
    # tiny ranges (most with no line starting in them) still yield every line once
    tiny = [dataclasses.replace(split, segments=tuple(
        dataclasses.replace(s, start=b, length=min(50, s.start + s.length - b))
        for s in split.segments for b in range(s.start, s.start + s.length, 50)))
        for split in splits[:2]]
    got = pa.concat_tables(pa.Table.from_batches(list(source.read_split(s, 1000)),
                                                 schema=tables[0].schema) for s in tiny)
    assert got["k"].to_pylist() == [k for t in tables[:2] for k in t["k"].to_pylist()]


def test_csv_whose_values_may_hold_newlines_is_read_a_whole_file_a_split(tmp_path):
    import pyarrow.csv as pacsv
    from yarnflow.core.operators.csv_source import CsvSource
    pacsv.write_csv(csv_rows(0, 30_000), tmp_path / "a.csv")
    source = CsvSource(str(tmp_path), parse_options=pacsv.ParseOptions(
        newlines_in_values=True)).bound(FileSystemSettings())
    splits = source.create_input_splits(4, SPLIT_SIZE)
    assert [[(s.start, s.length) for s in split.segments] for split in splits] == [[(0, None)]]
    assert sum(b.num_rows for b in source.read_split(splits[0], 1000)) == 30_000


def test_a_local_output_on_a_cluster_is_refused_with_where_to_write_instead():
    with pytest.raises(LocalPathRefused, match=r"output file:///out is a local path.*Fix: "
                       r"write to the cluster's file system \(hdfs://nn:9000/out"):
        CLUSTER.check_reachable("file:///out", "output")


def test_a_webhdfs_create_passes_over_a_datanode_that_takes_no_connection(monkeypatch):
    """A DataNode whose host just died still gets writes from the NameNode until its
    heartbeats expire: the writer excludes it and asks again, as HDFS's client does.
    One that takes the connection has the long stall timeout for the bytes."""
    import io
    import requests
    from types import SimpleNamespace
    from yarnflow.core.fs import webhdfs
    from yarnflow.core.fs.webhdfs import DATANODE_ATTEMPTS, DATANODE_STALL_TIMEOUT_S, _StrictFile

    asked, sent, timeouts, connected = [], [], [], []

    def create_connection(address, timeout):
        connected.append((address, timeout))
        if address[0] == "127.0.0.9":
            raise TimeoutError("timed out")
        return SimpleNamespace(close=lambda: None)
    monkeypatch.setattr(webhdfs.socket, "create_connection", create_connection)

    class NameNode:
        kwargs = {}

        def _call(self, op, method, path, redirect, **kwargs):
            asked.append(kwargs.get("excludedatanodes", ""))
            dead = "127.0.0.9" if len(asked) < 3 else "127.0.0.2"
            return SimpleNamespace(headers={"Location": f"http://{dead}:9864/webhdfs/v1{path}"})

        def _apply_proxy(self, location):
            return location

    class Session:
        def request(self, method, url, data, headers, timeout):
            sent.append(url)
            timeouts.append(timeout)
            return SimpleNamespace(raise_for_status=lambda: None)

    fs = NameNode()
    fs.session = Session()
    file = _StrictFile.__new__(_StrictFile)
    file.fs, file.path, file.kwargs, file.mode, file.offset = fs, "/out/part-0", {}, "wb", 0
    file.buffer = io.BytesIO(b"rows")
    file.closed = False
    assert file._upload_chunk(final=True)
    assert asked == ["", "127.0.0.9", "127.0.0.9"]
    # the dead DataNode got connection attempts of the short timeout and no bytes
    assert [a for a, _ in connected] == [("127.0.0.9", 9864)] * 2 + [("127.0.0.2", 9864)]
    assert all(t == webhdfs.DATANODE_CONNECT_TIMEOUT_S for _, t in connected)
    assert sent == ["http://127.0.0.2:9864/webhdfs/v1/out/part-0"]
    assert timeouts == [DATANODE_STALL_TIMEOUT_S]
    file.closed = True                         # written: nothing for fsspec to flush
    # a DataNode after another that takes no connection: the write fails, and says why
    asked.clear()
    fs._call = lambda op, method, path, redirect, **kw: (asked.append(1), SimpleNamespace(
        headers={"Location": "http://127.0.0.9:9864/x"}))[1]
    file.closed, file.offset = False, 0
    with pytest.raises(requests.exceptions.ConnectionError):
        file._upload_chunk(final=True)
    assert len(asked) == DATANODE_ATTEMPTS and file.closed


def test_a_jobmasters_outputs_renew_their_lease_until_the_commit_and_never_after(tmp_path):
    import pyarrow as pa

    import yarnflow.client as yf
    from tests.conftest import wait_until
    from yarnflow.appmaster.jobmaster.outputs import JobOutputs
    from yarnflow.conf import Configuration
    from yarnflow.rpc.codec import as_received

    p = yf.Pipeline("leased")
    p.from_arrow(pa.table({"x": [1]})).write_parquet(str(tmp_path / "out"))
    outputs = JobOutputs(as_received(p.job_graph(Configuration.load())), lease_timeout=50.0)
    assert outputs.setup() is None
    lease = next(tmp_path.glob(".out.yarnflow-lease-*/renewed"))
    lapse(lease, 40)
    lapsed = os.stat(lease).st_mtime
    outputs.renew_leases()
    wait_until(lambda: os.stat(lease).st_mtime > lapsed, 10, "the lease to be renewed")
    assert outputs.commit({v: {} for v in outputs.sinks}) is None
    outputs.renew_leases()                       # too late: the job has committed
    assert sorted(os.listdir(tmp_path)) == ["out"]
