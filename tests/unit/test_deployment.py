"""Deployment descriptors through their wire form: what the subtasks of a vertex share is
serialized once, and each executor still reads exactly its own subtask's channels."""
from __future__ import annotations

from types import SimpleNamespace

from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph
from yarnflow.appmaster.jobmaster.scheduler.deployment import (build_descriptor,
                                                               invalidate_descriptors)
from yarnflow.core.jobgraph import JobGraph, JobVertex, ShipStrategy
from yarnflow.rpc.codec import tdd_from_proto, tdd_to_bytes
from yarnflow.rpc.generated import taskexecutor_pb2
from yarnflow.taskexecutor.network.input_gate import channels_of
from yarnflow.core.user_code import UserCode


def _deployable() -> ExecutionGraph:
    """src(2) -FORWARD-> mid(2) -HASH-> dst(3), every subtask in a slot of its own host."""
    graph = JobGraph("g")
    src = graph.add_vertex(JobVertex("src", UserCode.received(b"src-op"), 2, num_inputs=0))
    mid = graph.add_vertex(JobVertex("mid", UserCode.received(b"map-op"), 2, num_inputs=1))
    dst = graph.add_vertex(JobVertex("dst", UserCode.received(b"map-op"), 3, num_inputs=1))
    graph.connect(src, mid, ShipStrategy.FORWARD)
    graph.connect(mid, dst, ShipStrategy.HASH, ["x"])
    eg = ExecutionGraph(graph.resolve(1))
    for execution in eg.current_executions():
        name = f"{execution.vertex.job_vertex.name}-{execution.vertex.subtask_index}"
        execution.slot = SimpleNamespace(allocation_id=f"alloc-{name}", location=SimpleNamespace(
            data_address=f"{name}:9", resource_id=f"te-{name}"))
    return eg


def _over_the_wire(eg: ExecutionGraph, name: str) -> list:
    vertex = next(v for v in eg.job_vertices.values() if v.name == name)
    sent = [build_descriptor(v.current, "jm-1", "am:1") for v in vertex.task_vertices]
    wires = [tdd_to_bytes(tdd) for tdd in sent]
    assert len({id(tdd.info.wire) for tdd in sent}) == 1, "the vertex part is serialized once"
    return [tdd_from_proto(taskexecutor_pb2.TaskDeploymentDescriptor.FromString(w)) for w in wires]


def test_each_subtask_reads_its_own_subpartition_of_every_producer():
    eg = _deployable()
    received = _over_the_wire(eg, "dst")
    for index, tdd in enumerate(received):
        assert (tdd.subtask_index, tdd.attempt_id) == (index, eg_attempt(eg, "dst", index))
        assert (tdd.info.job_master_id, tdd.info.vertex_name, tdd.info.parallelism) == \
            ("jm-1", "dst", 3)
        assert tdd.allocation_id == f"alloc-dst-{index}"
        channels = channels_of(tdd.inputs[0], tdd.subtask_index)
        assert [(c.data_address, c.subpartition) for c in channels] == \
            [("mid-0:9", index), ("mid-1:9", index)]


def test_a_pointwise_consumer_reads_only_its_partitions_whole():
    eg = _deployable()
    received = _over_the_wire(eg, "mid")
    reads = [[(c.partition_id.split("#")[1], c.data_address, c.subpartition)
              for c in channels_of(tdd.inputs[0], tdd.subtask_index)] for tdd in received]
    assert reads == [[("0", "src-0:9", 0)], [("1", "src-1:9", 0)]]
    produced = received[1].info.produced[0]
    assert produced.num_subpartitions == 3 and produced.keys == ("x",)


def test_a_moved_producer_changes_what_later_consumers_are_sent():
    eg = _deployable()
    _over_the_wire(eg, "dst")
    mid = next(v for v in eg.job_vertices.values() if v.name == "mid")
    mid.task_vertices[1].current.slot.location.data_address = "elsewhere:9"
    invalidate_descriptors(mid.produced[0])
    received = _over_the_wire(eg, "dst")
    assert [c.data_address for c in channels_of(received[2].inputs[0], 2)] == \
        ["mid-0:9", "elsewhere:9"]


def eg_attempt(eg: ExecutionGraph, name: str, index: int) -> str:
    vertex = next(v for v in eg.job_vertices.values() if v.name == name)
    return str(vertex.task_vertices[index].current.attempt_id)
