"""Executors asked on the hosts that store their input (issue 30, item 6).

The input is Parquet files each stored whole on one host (one replica, written
through that host's DataNode), so where an executor runs decides whether it reads
its splits from its own disk. The ApplicationMaster lists the splits, spreads the
source subtasks over the hosts in proportion to what each stores, and asks YARN for
each executor on its subtask's host (a Skein service per host, relaxed locality).

- 3 executors over 3 hosts that store 2 files each: one executor on each host, every
  split read locally.
- 2 executors over 3 hosts that store 3, 2 and 1 files: the executors on the two
  hosts that store the most; the third host's file is read across the network (5/6).

The figures land in test-artifacts/locality.json."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tests.conftest import artifacts_dir
from tests.yarn.conftest import FAST, HOSTS, PIPELINES, submitted_app_id, yarnflow
from yarnflow.client.targets.yarn_apps import YarnApplication

SHAPES = str(PIPELINES / "shapes.py")
# where executors land depends on every host's free room: no other application runs
pytestmark = pytest.mark.alone
ROWS_PER_FILE = 60_000
ROW_GROUP = 15_000       # four row groups a file: splits are made of whole row groups


def part(index: int) -> pa.Table:
    first = index * ROWS_PER_FILE
    return pa.table({"k": pa.array(range(first, first + ROWS_PER_FILE), pa.int64()),
                     "v": pa.array([float(index)] * ROWS_PER_FILE)})


def read_where_stored(hdfs, name: str, files_per_host: list[int], executors: int) -> dict:
    """Write ``files_per_host[i]`` files on HOSTS[i], copy them with ``executors`` source
    subtasks (one slot per executor), check the copy, and return the figures: where
    the source subtasks ran and the share of splits read on a host that stores them."""
    base = hdfs.scratch(name)
    placed = [host for host, count in zip(HOSTS, files_per_host) for _ in range(count)]
    for index, host in enumerate(placed):
        uri = f"{base}/input/part-{index:02d}.parquet"
        hdfs.write_table_on(part(index), uri, host, row_group_size=ROW_GROUP)
        stored = {h for block in hdfs.block_hosts(uri) for h in block}
        assert stored == {host}, f"{uri} should be stored on {host} only: {stored}"
    proc = yarnflow("run", "-t", "yarn-per-job", "--attach", "--no-progress", *FAST,
                    "-D", "taskmanager.numberOfTaskSlots=1", SHAPES, "--", "copy",
                    "--input", f"{base}/input", "--out", f"{base}/out",
                    "--parallelism", str(executors), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with YarnApplication(submitted_app_id(proc), timeout=30) as app:
        details = app.archived_details()
    assert details is not None
    source = details.vertex_running("parquet-source").subtasks     # chained to the sink
    local = sum(s.splits_local for s in source)
    located = local + sum(s.splits_remote for s in source)
    got = hdfs.read_table(f"{base}/out").sort_by("k")
    want = pa.concat_tables([part(i) for i in range(len(placed))])
    assert got.equals(want), "the copy is not its input, row for row"
    return {"executors": executors, "files_per_host": dict(zip(HOSTS, files_per_host)),
            "source_hosts": sorted(s.host for s in source), "splits": located,
            "local_read_fraction": round(local / located, 3) if located else 0.0}


@pytest.fixture(scope="module")
def figures():
    found: dict[str, dict] = {}
    yield found
    (artifacts_dir() / "locality.json").write_text(json.dumps(found, indent=1) + "\n")


def test_three_executors_over_three_hosts_run_one_on_each_and_read_only_local_splits(hdfs, figures):
    got = figures["3_executors_over_3_hosts"] = read_where_stored(hdfs, "locality-3", [2, 2, 2], 3)
    assert got["source_hosts"] == sorted(HOSTS), got
    assert got["local_read_fraction"] >= 0.9, got


def test_two_executors_over_three_hosts_run_where_most_is_stored(hdfs, figures):
    got = figures["2_executors_over_3_hosts"] = read_where_stored(hdfs, "locality-2", [3, 2, 1], 2)
    assert got["source_hosts"] == sorted(HOSTS[:2]), got
    # each reads its own host's files; the third host's one file is read remotely (1/6)
    assert got["local_read_fraction"] >= 0.8, got
