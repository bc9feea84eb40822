"""Profiles per shared slot (issue 15, item 4): a shared slot needs the specs of the
subtasks that share it, not of its whole slot sharing group (seed 000)."""
from __future__ import annotations

import pyarrow as pa

import yarnflow as yf
from tests.unit.fakes import Harness, ManualMainThread
from yarnflow.conf import Configuration
from yarnflow.core.resources import ResourceSpec as R
from yarnflow.core.worker_spec import plan_worker_specs, slots_needed

DEFAULT = R(1, 1024)


def narrow_heavy_map() -> yf.Pipeline:
    """A source of parallelism 2 (1 core, 1 GB) sharing slots with a map of parallelism 1
    (2 cores, 2 GB): shared slot 0 holds both, shared slot 1 only the source."""
    p = yf.Pipeline("profiles", parallelism=2)
    src = p.from_arrow(pa.table({"x": list(range(100))})).resources(R(1, "1g"))
    src.rebalance().map(lambda b: b, name="heavy").set_parallelism(1).resources(R(2, "2g")) \
       .write_parquet("/tmp/unused-out").set_parallelism(1)
    return p


def test_each_shared_slot_sums_only_the_subtasks_it_holds():
    graph = narrow_heavy_map().job_graph(Configuration.load())
    assert graph.shared_slot_profiles("default", DEFAULT) == [R(3, "3g"), R(1, "1g")]
    assert graph.slot_profile("default", DEFAULT) == R(3, "3g"), "the largest, for validation"
    assert slots_needed(graph, DEFAULT) == {R(3, "3g"): 1, R(1, "1g"): 1}


def test_the_container_plan_never_starts_more_slots_than_the_job_needs():
    graph = narrow_heavy_map().job_graph(Configuration.load())
    specs = plan_worker_specs(graph, DEFAULT, max_slots=4, overhead_mb=256, largest=R(16, "32g"))
    assert {profile: spec.num_slots for profile, spec in specs.items()} == \
        {R(3, "3g"): 1, R(1, "1g"): 1}


def test_the_job_master_asks_for_each_shared_slot_at_its_own_size():
    graph = narrow_heavy_map().job_graph(Configuration.load())
    h = Harness(graph, Configuration.load(), main=ManualMainThread())
    h.start()
    try:
        assert sorted(h.rm.requests.values(), key=lambda r: r.cpu) == [R(1, "1g"), R(3, "3g")]
    finally:
        h.close()
