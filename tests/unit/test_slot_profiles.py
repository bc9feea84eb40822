"""Profiles per shared slot (issue 15, item 4): a shared slot needs the specs of the
subtasks that share it, not of its whole slot sharing group (seed 000)."""
from __future__ import annotations

import pyarrow as pa
import pytest

import yarnflow.client as yf
from tests.unit.fakes import Harness, ManualMainThread
from yarnflow.conf import Configuration
from yarnflow.core.resources import ResourceSpec as R
from yarnflow.core.worker_spec import plan_worker_specs, slots_needed

DEFAULT = R(1, 1024)


def narrow_heavy_map(out: str = "/tmp/unused-out") -> yf.Pipeline:
    """A source of parallelism 2 (1 core, 1 GB) sharing slots with a map of parallelism 1
    (2 cores, 2 GB): shared slot 0 holds both, shared slot 1 only the source."""
    p = yf.Pipeline("profiles", parallelism=2)
    src = p.from_arrow(pa.table({"x": list(range(100))})).resources(R(1, "1g"))
    src.rebalance().map(lambda b: b, name="heavy").set_parallelism(1).resources(R(2, "2g")) \
       .write_parquet(out).set_parallelism(1)
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


def test_the_job_master_asks_for_each_shared_slot_at_its_own_size(tmp_path):
    # a JobMaster that starts claims its output: each test its own (leases, output_commit.py)
    graph = narrow_heavy_map(str(tmp_path / "out")).job_graph(Configuration.load())
    h = Harness(graph, Configuration.load(), main=ManualMainThread())
    h.start()
    try:
        assert sorted(h.rm.requests.values(), key=lambda r: r.cpu) == [R(1, "1g"), R(3, "3g")]
    finally:
        h.close()


def test_explain_json_gives_each_shared_slot_and_the_executors_the_job_would_start():
    """`yarnflow explain --json` (issue 15, item 5), as data: one 3c/3g slot and one
    1c/1g slot, an executor of each, and every vertex with its inputs."""
    from yarnflow.client.explain import plan_json
    config = Configuration.load()
    plan = plan_json(narrow_heavy_map().job_graph(config), config)
    assert plan["shared_slots"] == {"default": [
        {"cpu": 3.0, "memory_mb": 3072, "gpus": 0}, {"cpu": 1.0, "memory_mb": 1024, "gpus": 0}]}
    workers = sorted((w["slot_profile"]["cpu"], w["slots"], w["executors"])
                     for w in plan["worker_specs"])
    assert workers == [(1.0, 1, 1), (3.0, 1, 1)]
    heavy = next(v for v in plan["vertices"] if v["name"] == "heavy -> parquet-sink")
    assert heavy["parallelism"] == 1 and heavy["subtask_profile"]["memory_mb"] == 2048
    assert [(i["ship"], i["exchange"]) for i in heavy["inputs"]] == [("REBALANCE", "PIPELINED")]


def test_subtask_slot_profiles_worker_specs_and_inputs_cross_the_wire():
    from yarnflow.core.details import JobDetails, SubtaskDetails, VertexDetails, VertexInput
    from yarnflow.core.messages import TaskMetrics
    from yarnflow.core.status import ExecutionState, JobStatus
    from yarnflow.rpc.codec import job_details_from_proto, job_details_to_proto
    join = VertexDetails("j", "join", 2, [
        SubtaskDetails(i, ExecutionState.RUNNING, 0,
                       metrics=TaskMetrics(records_in=1050, records_in_per_input=(1000, 50)),
                       slot_profile=R(3, "3g"), worker_spec="1x3c-3072m") for i in range(2)],
        [VertexInput("orders", "forward"), VertexInput("codes", "broadcast")])
    details = JobDetails("job-1", "join", JobStatus.RUNNING, 1.0, vertices=[join])
    assert job_details_from_proto(job_details_to_proto(details)) == details


def two_sized_group(out: str = "/tmp/unused-out") -> yf.Pipeline:
    """Issue 57, item 4: one slot sharing group whose shared slots have two sizes, four
    of 2 cores and 4 GB (source and map), two of 2 cores and 2 GB (the source alone)."""
    p = yf.Pipeline("two-sizes", parallelism=6)
    src = p.from_arrow(pa.table({"x": list(range(100))})).resources(R(1.5, "2g"))
    src.rebalance().map(lambda b: b, name="m").set_parallelism(4).resources(R(0.5, "2g")) \
       .write_parquet(out).set_parallelism(4)
    return p


def test_an_executor_started_without_a_plan_holds_no_more_slots_than_the_job_uses_at_once(
        tmp_path):
    from yarnflow.appmaster.resourcemanager.slotmanager.slot_manager import SlotManager
    config = Configuration.load(overrides=["taskmanager.numberOfTaskSlots=4"])
    graph = two_sized_group(str(tmp_path / "out")).job_graph(config)
    small, big = R(1.5, "2g"), R(2, "4g")
    assert slots_needed(graph, DEFAULT) == {big: 4, small: 2}
    h = Harness(graph, config, main=ManualMainThread())
    h.start()
    try:      # the JobMaster tells the ResourceManager how many of each it holds at once
        wanted = {(h.rm.requests[a], n) for a, n in h.rm.wanted.items()}
        assert wanted == {(big, 4), (small, 2)}
    finally:
        h.close()
    manager = SlotManager(None, slots_per_worker=4, overhead_mb=256,   # type: ignore[arg-type]
                          max_workers=10, taskmanager_timeout=30)
    assert manager.worker_spec_for(small, wanted=2).name == "2x1.5c-2048m"
    assert manager.worker_spec_for(big, wanted=4).name == "4x2c-4096m"
    assert manager.worker_spec_for(big).num_slots == 4           # not said: as configured


def test_a_gpu_is_refused_in_one_line_that_names_the_way_to_gpu_hosts():
    # YARN is never asked for GPUs: a spec that asks for one would run without it
    with pytest.raises(ValueError, match=r"does not ask YARN for GPUs.*node_label='gpu'"):
        R(cpu=1, memory="1g", gpus=1)
    assert R(cpu=1, memory="1g", gpus=0).gpus == 0


# --- a shared slot holds what may run at once (issue 81) --------------------------------
def _vertex(graph, name: str, spec: R | None, parallelism: int = 3, inputs: int = 0):
    from yarnflow.core.jobgraph import JobVertex
    from yarnflow.core.user_code import UserCode
    return graph.add_vertex(JobVertex(name, UserCode.received(b"op"), parallelism,
                                      resources=spec, slot_sharing_group="default",
                                      num_inputs=inputs))


def _blocking(graph, a, b, ship=None, target_input: int = 0):
    from yarnflow.core.jobgraph import PartitionType, ShipStrategy
    graph.connect(a, b, ShipStrategy.HASH if ship is None else ship, ["k"], PartitionType.BLOCKING, target_input)


def test_a_stage_after_a_blocking_exchange_adds_nothing_to_the_slot_it_shares():
    """The issue's job: a 3-core source chain, a BLOCKING hash exchange, a 1-core
    aggregate. Summed, each shared slot was 4 cores, which fit no host with 3 free;
    the two stages never run at once, so 3 cores do."""
    from yarnflow.core.jobgraph import JobGraph, PartitionType, ShipStrategy
    graph = JobGraph("stages")
    source = _vertex(graph, "source", R(3, "1300m"))
    aggregate = _vertex(graph, "aggregate", R(1, "1g"), inputs=1)
    sink = _vertex(graph, "sink", None, inputs=1)
    _blocking(graph, source, aggregate)
    graph.connect(aggregate, sink, ShipStrategy.FORWARD, (), PartitionType.PIPELINED)
    assert graph.shared_slot_profiles("default", DEFAULT) == [R(3, "1300m")] * 3


def test_stages_that_may_run_together_still_add_up():
    """Two sources read by a join through BLOCKING edges may run at the same time
    (2 + 2 cores); the join runs after both (1 core): 4. A forward BLOCKING edge
    between different parallelisms does not make subtask i wait for subtask i's
    producer, so it orders nothing; and two regions that read each other's results
    around a cycle run as one."""
    from yarnflow.core.jobgraph import JobGraph, ShipStrategy
    graph = JobGraph("join")
    left, right = _vertex(graph, "left", R(2, "1g")), _vertex(graph, "right", R(2, "2g"))
    join = _vertex(graph, "join", R(1, "512m"), inputs=2)
    _blocking(graph, left, join)
    _blocking(graph, right, join, target_input=1)
    assert graph.slot_profile("default", DEFAULT) == R(4, "3g")

    narrowing = JobGraph("forward")
    wide = _vertex(narrowing, "wide", R(2, "1g"), parallelism=4)
    narrow = _vertex(narrowing, "narrow", R(1, "1g"), parallelism=2, inputs=1)
    _blocking(narrowing, wide, narrow, ShipStrategy.FORWARD)
    assert narrowing.slot_profile("default", DEFAULT) == R(3, "2g")

    equal = JobGraph("forward-equal")
    first = _vertex(equal, "first", R(2, "1g"))
    _blocking(equal, first, _vertex(equal, "second", R(1, "2g"), inputs=1), ShipStrategy.FORWARD)
    assert equal.slot_profile("default", DEFAULT) == R(2, "2g"), "each dimension's own largest"

    cycle = JobGraph("cycle")
    a, b = _vertex(cycle, "a", R(1, "1g"), inputs=1), _vertex(cycle, "b", R(2, "1g"), inputs=1)
    _blocking(cycle, a, b)
    _blocking(cycle, b, a)
    assert cycle.slot_profile("default", DEFAULT) == R(3, "2g")


def test_a_per_job_application_gives_a_later_stages_smaller_slot_its_smallest_planned_size():
    """Per-job mode declares its container sizes up front, one per shared slot profile;
    a later stage's shared slot asked for less (issue 81) gets the smallest that holds
    it, since the application has no other."""
    from yarnflow.appmaster.resourcemanager.slotmanager import SlotManager
    from yarnflow.core.worker_spec import WorkerSpec
    planned = {R(3, "1g"): WorkerSpec(R(3, "1g"), 1, 256), R(2, "4g"): WorkerSpec(R(2, "4g"), 1, 256)}
    manager = SlotManager(None, slots_per_worker=4, overhead_mb=256,   # type: ignore[arg-type]
                          max_workers=10, taskmanager_timeout=30, worker_specs=planned)
    assert manager.worker_spec_for(R(1, "512m")) == planned[R(3, "1g")]
    assert manager.worker_spec_for(R(1, "2g")) == planned[R(2, "4g")]
    assert manager.worker_spec_for(R(3, "1g")) == planned[R(3, "1g")]


def test_a_per_job_application_declares_a_container_size_for_each_stages_slots():
    """The sizes a later stage's shared slots are asked for are declared up front (a
    per-job application names its containers when it is submitted), with no
    instances of their own."""
    from yarnflow.client.targets.base import planned_worker_specs
    from yarnflow.core.jobgraph import JobGraph, PartitionType, ShipStrategy
    graph = JobGraph("stages")
    source = _vertex(graph, "source", R(3, "1300m"))
    aggregate = _vertex(graph, "aggregate", R(1, "1g"), inputs=1)
    _blocking(graph, source, aggregate)
    graph.connect(aggregate, _vertex(graph, "sink", None, inputs=1), ShipStrategy.FORWARD, (),
                  PartitionType.PIPELINED)
    assert graph.stage_slot_profiles("default", DEFAULT) == {R(3, "1300m"), R(1, "1g")}
    specs = planned_worker_specs(graph, Configuration.load())
    assert {p: s.num_slots for p, s in specs.items()} == {R(3, "1300m"): 1, R(1, "1g"): 1}
