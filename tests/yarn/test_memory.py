"""Containers that grow past their size, on a cluster that enforces it (issue 57): the
test clusters' NodeManagers run Hadoop's physical memory check
(docker-hadoop/conf/yarn-site.xml). A map that touches 3 GB in a 1 GB slot is killed
by its NodeManager and the job says so in one line with the fix; the join, aggregate
and sort larger than their 256 MB slots (pipelines/spill_jobs.py) run as per-job
applications without a restart (none is allowed: a killed container would fail them)
and give the exact answer."""
from __future__ import annotations

import re

import numpy as np
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tests.yarn.conftest import FAST, PIPELINES, submitted_app_id, yarnflow
from tests.yarn.pipelines import spill_jobs

SHAPES = str(PIPELINES / "shapes.py")
NO_RESTART = ["-D", "restart-strategy.type=none"]
pytestmark = pytest.mark.usefixtures("yarn_cluster")


def test_a_container_past_its_size_is_killed_by_its_nodemanager_and_told_in_one_line(
        yarn_cluster, hdfs):
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *NO_RESTART, SHAPES, "--",
                    "memory-hog", "--gb", "3", "--memory", "1g", "--work", "30",
                    "--out", f"{hdfs.scratch('hog')}/out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app = yarn_cluster.wait_finished(submitted_app_id(proc), timeout=240)
    assert app["finalStatus"] == "FAILED", app["diagnostics"]
    # its container: 1 GB of slot and 256 MB of taskmanager.memory.overhead
    line = re.search(r"YARN container \S+ on \S+ was killed by its NodeManager for using "
                     r"[\d.]+ GB of physical memory, more than its container's 1\.[23]5? GB; "
                     r"fix: raise taskmanager\.memory\.overhead [^\n]*managed\.fraction",
                     app["diagnostics"])
    assert line, app["diagnostics"]


def _files_in_order(hdfs, uri: str) -> list[str]:
    infos = hdfs.fs.arrow.get_file_info(pafs.FileSelector(hdfs.fs.path(uri)))
    return sorted(i.path for i in infos if i.path.endswith(".parquet"))


@pytest.mark.parametrize("job", ["join", "aggregate", "sort"])
def test_jobs_larger_than_their_slots_spill_and_no_container_is_killed(yarn_cluster, hdfs, job):
    out = f"{hdfs.scratch(f'spill-{job}')}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *NO_RESTART,
                    "-D", "taskmanager.default-slot.memory=256m",
                    "-D", "pipeline.batch-rows=16384", SHAPES, "--", f"spill-{job}",
                    "--out", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    app = yarn_cluster.wait_finished(app_id, timeout=900)
    assert app["finalStatus"] == "SUCCEEDED", app["diagnostics"]
    if job == "join":
        assert hdfs.read_table(out).to_pylist() == [spill_jobs.join_answer()]
    elif job == "aggregate":
        assert hdfs.read_table(out).to_pylist() == [spill_jobs.AGGREGATE_ANSWER]
    else:
        got = np.concatenate([pq.read_table(path, columns=["k"], filesystem=hdfs.fs.arrow)
                              ["k"].to_numpy() for path in _files_in_order(hdfs, out)])
        assert np.array_equal(got, spill_jobs.sorted_keys())
    status = yarnflow("status", app_id, timeout=120)         # from the job's archive
    assert status.returncode == 0, status.stdout + status.stderr
    assert "MB spilled" in status.stdout, status.stdout     # the summary's column
