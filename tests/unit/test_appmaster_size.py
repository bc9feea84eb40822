"""The ApplicationMaster's container follows its job (issue 32, item 7): a small job's is
what every one got before, a 10,000 x 10,000 job's grows with the executors and
subtasks it tracks, never past what YARN grants, and a configured size wins."""
from __future__ import annotations

import pytest

from yarnflow.client.targets.yarn import build_spec, plan_containers
from yarnflow.conf import ConfigError, Configuration
from yarnflow.core.appmaster_size import MINIMUM_MB, appmaster_memory_mb, planned_executors
from yarnflow.core.jobgraph import JobGraph, JobVertex, ShipStrategy
from yarnflow.core.resources import ResourceSpec as R
from yarnflow.core.user_code import UserCode
from yarnflow.core.worker_spec import plan_worker_specs

SLOT = R(1, 1024)


def shuffle(parallelism: int) -> JobGraph:
    graph = JobGraph("scale")
    src = graph.add_vertex(JobVertex("source", UserCode.received(b"op"), parallelism, num_inputs=0))
    sink = graph.add_vertex(JobVertex("sink", UserCode.received(b"op"), parallelism, num_inputs=1))
    graph.connect(src, sink, ShipStrategy.HASH, ["k"])
    return graph.resolve(1)


def size(parallelism: int, slots_per_executor: int, largest_mb: int = 65536) -> tuple[int, int]:
    graph = shuffle(parallelism)
    specs = plan_worker_specs(graph, SLOT, slots_per_executor, 256, R(64, 65536))
    return (planned_executors(graph, specs, SLOT),
            appmaster_memory_mb(graph, specs, SLOT, largest_mb))


def test_a_small_job_gets_the_minimum():
    assert size(4, 1) == (4, MINIMUM_MB)


def test_a_10000_wide_job_grows_with_its_executors():
    executors, packed = size(10_000, 10)
    assert executors == 1_000 and MINIMUM_MB < packed <= 1536
    executors, single = size(10_000, 1)
    assert executors == 10_000 and 3584 <= single <= 4096
    assert single % 256 == 0 and packed % 256 == 0


def test_never_more_than_yarn_grants():
    assert size(10_000, 1, largest_mb=2048)[1] == 2048


def test_a_configured_size_wins_and_the_old_key_is_named_as_renamed(tmp_path):
    import pyarrow as pa
    import yarnflow.client as yf
    config = Configuration.load(overrides=["yarn.python=/opt/python/bin/python3",
                                           "jobmanager.memory.process.size=3g"])
    p = yf.Pipeline("j")
    p.from_arrow(pa.table({"x": [1]})).write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(config)
    spec = build_spec(graph, config, plan_containers(graph, config), tmp_path, None, [])
    assert spec.master.resources.memory == 3072
    sized = Configuration.load(overrides=["yarn.python=/opt/python/bin/python3"])
    spec = build_spec(graph, sized, plan_containers(graph, sized), tmp_path, None, [])
    assert spec.master.resources.memory == MINIMUM_MB
    with pytest.raises(ConfigError, match="'yarn.appmaster.memory' is now "
                                          "'jobmanager.memory.process.size'"):
        Configuration.load(overrides=["yarn.appmaster.memory=2g"])
