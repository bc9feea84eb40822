"""Adaptive slot profiles on the real cluster (issue 36, item 4): two stages whose
inputs measured ten times apart run in YARN containers of different memory, each
asked for once its producers had finished (the sizes were declared as Skein services
when the job was submitted, and the ApplicationMaster chose among them)."""
from __future__ import annotations

import pytest

from tests.yarn.conftest import FAST, PIPELINES, submitted_app_id, yarnflow
from yarnflow.client.targets.yarn_apps import YarnApplication

SHAPES = str(PIPELINES / "shapes.py")
pytestmark = pytest.mark.usefixtures("yarn_cluster")


def test_two_stages_ten_times_apart_get_containers_of_different_memory(yarn_cluster, hdfs):
    out = f"{hdfs.scratch('adaptive')}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", "--attach", "--no-progress", *FAST,
                    "-D", "execution.batch.adaptive.enabled=true",
                    "-D", "execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task=64 mb",
                    "-D", "execution.batch.adaptive.slot-memory.read-factor=100",
                    "-D", "execution.batch.adaptive.slot-memory.max=1024m",
                    SHAPES, "--", "adaptive-stages", "--rows", "400000", "--out", out,
                    timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with YarnApplication(submitted_app_id(proc), timeout=30) as app:
        details = app.archived_details()
    assert details is not None
    specs = {name: {s.worker_spec for s in details.vertex_running(name).subtasks}
             for name in ("big-stage", "small-stage")}       # each chained to its sink
    # 6.1 MB read x 100 -> 1024 MB slots; 625 KB x 100 -> the 64 MB floor: each stage in
    # containers of its own size (the sources share slots of 2 x 64 MB)
    assert specs == {"big-stage": {"1x1c-1024m"}, "small-stage": {"1x1c-64m"}}, specs
    assert "slots of 1c-1024m" in details.vertex_running("big-stage").decision
    assert hdfs.read_table(f"{out}/big").num_rows == 400_000
    assert hdfs.read_table(f"{out}/small").num_rows == 40_000
