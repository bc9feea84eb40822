"""Deployment descriptors through their wire form: what the subtasks of a vertex share is
serialized once, and each executor still reads exactly its own subtask's channels."""
from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph
from yarnflow.appmaster.jobmaster.scheduler.deployment import (build_descriptor,
                                                               invalidate_descriptors)
from yarnflow.core.jobgraph import JobGraph, JobVertex, ShipStrategy
from yarnflow.appmaster.jobmaster.scheduler.deployment_parts import DeploymentParts
from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.errors import MissingSharedParts
from yarnflow.core.fs import FileSystemSettings
from yarnflow.rpc.codec import shared_parts_from_proto, tdd_from_proto, tdd_to_bytes
from yarnflow.rpc.generated import taskexecutor_pb2
from yarnflow.taskexecutor.network.input_gate import channels_of
from yarnflow.taskexecutor.shared_parts import SharedParts
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


def ready(prepared: TaskDeploymentDescriptor | Future) -> TaskDeploymentDescriptor:
    """A prepared deployment, once its big parts are offloaded."""
    return prepared.result(timeout=30) if isinstance(prepared, Future) else prepared


class Executors:
    """The deployments' way to executors: a JobMaster's record of what each was sent,
    the wire, and each executor's cache of shared parts."""

    def __init__(self) -> None:
        self.parts = DeploymentParts(offload_min_size=1 << 20)
        self.caches: dict[str, SharedParts] = {}
        self.wire_bytes: list[int] = []

    def deploy(self, tdd: TaskDeploymentDescriptor, resource_id: str) -> TaskDeploymentDescriptor:
        sent = ready(self.parts.prepare(resource_id, tdd))
        wire = tdd_to_bytes(sent)
        self.wire_bytes.append(len(wire))
        cache = self.caches.setdefault(resource_id, SharedParts(FileSystemSettings()))
        message = taskexecutor_pb2.TaskDeploymentDescriptor.FromString(wire)
        cache.accept(shared_parts_from_proto(message))
        return tdd_from_proto(message, cache.get)


def _over_the_wire(eg: ExecutionGraph, name: str, executors: Executors | None = None) -> list:
    vertex = next(v for v in eg.job_vertices.values() if v.name == name)
    sent = [build_descriptor(v.current, "jm-1", "am:1") for v in vertex.task_vertices]
    assert len({id(tdd.info.part) for tdd in sent}) == 1, "the vertex part is serialized once"
    executors = executors or Executors()
    return [executors.deploy(tdd, v.current.slot.location.resource_id)
            for tdd, v in zip(sent, vertex.task_vertices)]


def test_each_subtask_reads_its_own_subpartition_of_every_producer():
    eg = _deployable()
    received = _over_the_wire(eg, "dst")
    for index, tdd in enumerate(received):
        assert (tdd.subtask_index, tdd.attempt_id) == (index, eg_attempt(eg, "dst", index))
        assert (tdd.info.job_master_id, tdd.info.vertex_name, tdd.info.parallelism) == \
            ("jm-1", "dst", 3)
        assert tdd.allocation_id == f"alloc-dst-{index}"
        channels = channels_of(tdd.inputs[0], tdd.subtask_index)
        assert [(c.data_address, c.subpartitions) for c in channels] == \
            [("mid-0:9", range(index, index + 1)), ("mid-1:9", range(index, index + 1))]


def test_a_pointwise_consumer_reads_only_its_partitions_whole():
    eg = _deployable()
    received = _over_the_wire(eg, "mid")
    reads = [[(c.partition_id.split("#")[1], c.data_address, c.subpartitions.start)
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


# --- shared parts: sent to each executor once ---------------------------------------------
def _shuffle(producers: int, consumers: int) -> ExecutionGraph:
    """src(producers) -HASH-> dst(consumers); producers on 50 executors, every consumer on
    the one executor ``te-dst``."""
    graph = JobGraph("g")
    src = graph.add_vertex(JobVertex("src", UserCode.received(b"src-op"), producers, num_inputs=0))
    dst = graph.add_vertex(JobVertex("dst", UserCode.received(b"dst-op"), consumers, num_inputs=1))
    graph.connect(src, dst, ShipStrategy.HASH, ["x"])
    eg = ExecutionGraph(graph.resolve(1))
    for execution in eg.current_executions():
        vertex = execution.vertex
        where = f"te-src-{vertex.subtask_index % 50}" if vertex.job_vertex.name == "src" else "te-dst"
        execution.slot = SimpleNamespace(
            allocation_id=f"alloc-{vertex.job_vertex.name}-{vertex.subtask_index}",
            location=SimpleNamespace(data_address=f"{where}:9", resource_id=where))
    return eg


def test_an_all_to_all_consumers_descriptor_does_not_grow_with_the_producer_parallelism():
    sizes = {}
    for producers in (10, 100, 2000):
        executors = Executors()
        received = _over_the_wire(_shuffle(producers, 4), "dst", executors)
        first, *rest = executors.wire_bytes
        assert len(set(rest)) == 1 and first > rest[0], executors.wire_bytes
        sizes[producers] = rest[0]
        # ... and yet each consumer reads every producer, from where it is
        for tdd in received:
            channels = channels_of(tdd.inputs[0], tdd.subtask_index)
            assert len(channels) == producers
            assert channels[producers - 1].data_address == f"te-src-{(producers - 1) % 50}:9"
            assert {c.subpartitions for c in channels} == {range(tdd.subtask_index,
                                                                 tdd.subtask_index + 1)}
    assert sizes[10] == sizes[100] == sizes[2000], sizes


def test_shared_parts_reach_each_executor_once_and_a_moved_producer_sends_the_new_ones():
    eg = _shuffle(8, 3)
    executors = Executors()
    _over_the_wire(eg, "dst", executors)
    assert executors.wire_bytes[0] > max(executors.wire_bytes[1:])
    held = set(executors.parts.sent_to("te-dst"))
    assert len(held) == 2 and len(executors.caches["te-dst"]) == 2   # task information, shuffle
    # a producer restarts elsewhere: consumers deployed after it read its new location
    src = next(v for v in eg.job_vertices.values() if v.name == "src")
    moved = src.task_vertices[5].current
    moved.slot = SimpleNamespace(allocation_id="alloc-new",
                                 location=SimpleNamespace(data_address="elsewhere:9", resource_id="te-new"))
    invalidate_descriptors(src.produced[0])
    received = _over_the_wire(eg, "dst", executors)
    now_held = set(executors.parts.sent_to("te-dst"))
    assert len(now_held - held) == 1, "the new shuffle descriptors, once; the task information is kept"
    assert executors.wire_bytes[3] > max(executors.wire_bytes[4:])
    for tdd in received:
        assert channels_of(tdd.inputs[0], tdd.subtask_index)[5].data_address == "elsewhere:9"


def test_the_jobs_batch_rows_travel_with_the_task_information():
    """A session's executor serves jobs that set their own pipeline.batch-rows: the
    JobMaster sends the job's with the vertex; unset, the executor uses its own."""
    eg = _deployable()
    dst = next(v for v in eg.job_vertices.values() if v.name == "dst")
    for batch_rows in (7, 0):
        dst.task_information = None          # built once per JobMaster: built again
        tdd = build_descriptor(dst.task_vertices[0].current, "jm-1", "am:1", batch_rows)
        received = Executors().deploy(tdd, dst.task_vertices[0].current.slot.location.resource_id)
        assert received.info.batch_rows == batch_rows


def test_an_executor_without_a_named_part_refuses_the_deployment():
    eg = _shuffle(4, 1)
    dst = next(v for v in eg.job_vertices.values() if v.name == "dst")
    tdd = build_descriptor(dst.task_vertices[0].current, "jm-1", "am:1")
    message = taskexecutor_pb2.TaskDeploymentDescriptor.FromString(tdd_to_bytes(tdd))
    with pytest.raises(MissingSharedParts, match="holds no deployment part"):
        tdd_from_proto(message, SharedParts(FileSystemSettings()).get)


def test_a_part_above_the_offload_size_is_read_from_the_cluster_file_system_once(tmp_path):
    eg = _shuffle(3000, 2)
    parts = DeploymentParts(offload_min_size=128, offload_dir=str(tmp_path / "parts"),
                            filesystem=FileSystemSettings())
    dst = next(v for v in eg.job_vertices.values() if v.name == "dst")
    tdd = build_descriptor(dst.task_vertices[0].current, "jm-1", "am:1")
    sent = ready(parts.prepare("te-dst", tdd))
    shuffle = tdd.inputs[0].shuffle_descriptors
    assert len(shuffle.data) >= 128
    offloaded = [p for p in sent.carried if p.offloaded]
    assert [p.key for p in offloaded] == [shuffle.key] and offloaded[0].data == b""
    wire = tdd_to_bytes(sent)
    assert shuffle.data not in wire and offloaded[0].offloaded.encode() in wire, \
        "the deployment names the file, not the bytes"
    cache = SharedParts(FileSystemSettings())
    message = taskexecutor_pb2.TaskDeploymentDescriptor.FromString(wire)
    cache.accept(shared_parts_from_proto(message))
    received = tdd_from_proto(message, cache.get)
    assert len(channels_of(received.inputs[0], 0)) == 3000
    parts.discard().result(timeout=30)
    assert not (tmp_path / "parts").exists()
    # read once: the executor holds it now, the file being gone
    assert tdd_from_proto(message, cache.get).inputs[0].shuffle_descriptors.data == shuffle.data
