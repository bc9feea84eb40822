"""The model's wire form: JobGraphs, ResourceSpecs and the gateways' messages to and
from protobuf. The model (``yarnflow.core``) knows nothing of protobuf; this module is the
one place both meet, so the client and the ApplicationMaster cannot disagree on it."""
from __future__ import annotations

from typing import Any

import cloudpickle

from yarnflow.core.jobgraph import JobGraph, JobVertex, PartitionType, ScheduleMode, ShipStrategy
from yarnflow.core.messages import (ClusterOverview, SlotReport, SlotRequest, SlotStatus,
                                    TaskExecutorLocation, TaskExecutorRegistration)
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.generated import common_pb2, jobgraph_pb2, resourcemanager_pb2


def fill_resource_spec(spec: ResourceSpec, message: Any) -> None:
    """Write ``spec`` into a ``ResourceSpec`` message field (protobuf sub-messages are
    filled in place, not assigned)."""
    message.cpu, message.memory_mb, message.gpus = spec.cpu, spec.memory_mb, spec.gpus


def resource_spec_from_proto(message: Any) -> ResourceSpec:
    return ResourceSpec(message.cpu, message.memory_mb, message.gpus)


def jobgraph_to_proto(graph: JobGraph) -> jobgraph_pb2.JobGraph:
    message = jobgraph_pb2.JobGraph(job_id=graph.job_id, name=graph.name,
                                    schedule_mode=int(graph.schedule_mode),
                                    spark_overhead_mb=graph.spark_overhead_mb)
    for vertex in graph.vertices.values():
        out = message.vertices.add(
            id=vertex.id, name=vertex.name, parallelism=vertex.parallelism or 0,
            slot_sharing_group=vertex.slot_sharing_group or "",
            co_location_group=vertex.co_location_group or "",
            operator=cloudpickle.dumps(vertex.operator), num_inputs=vertex.num_inputs,
            uses_spark=vertex.uses_spark,
            committer=cloudpickle.dumps(vertex.committer) if vertex.committer else b"")
        if vertex.resources is not None:
            out.has_resources = True
            fill_resource_spec(vertex.resources, out.resources)
    for edge in graph.edges:
        message.edges.add(source=edge.source.id, target=edge.target.id,
                          target_input=edge.target_input,
                          distribution=int(edge.distribution), ship=int(edge.ship),
                          keys=list(edge.keys), partition_type=int(edge.partition_type))
    return message


def jobgraph_from_proto(message: jobgraph_pb2.JobGraph, load_operators: bool = True) -> JobGraph:
    """Rebuild the graph. Operators stay cloudpickle bytes unless ``load_operators``: the
    ApplicationMaster never runs user code, so it never unpickles it."""
    graph = JobGraph(message.name, ScheduleMode(message.schedule_mode), message.job_id)
    graph.spark_overhead_mb = message.spark_overhead_mb
    for v in message.vertices:
        operator: Any = cloudpickle.loads(v.operator) if load_operators else v.operator
        graph.add_vertex(JobVertex(
            name=v.name, operator=operator, parallelism=v.parallelism or None,
            resources=resource_spec_from_proto(v.resources) if v.has_resources else None,
            slot_sharing_group=v.slot_sharing_group or None,
            co_location_group=v.co_location_group or None, num_inputs=v.num_inputs, id=v.id,
            uses_spark=v.uses_spark,
            committer=cloudpickle.loads(v.committer) if v.committer else None))
    for e in message.edges:
        graph.connect(graph.vertices[e.source], graph.vertices[e.target], ShipStrategy(e.ship),
                      e.keys, PartitionType(e.partition_type), e.target_input)
    return graph


def location_from_proto(message: Any) -> TaskExecutorLocation:
    return TaskExecutorLocation(message.resource_id, message.host, message.rpc_address,
                                message.data_address)


def slot_report_from_proto(message: Any) -> SlotReport:
    return SlotReport(tuple(SlotStatus(s.slot_index, resource_spec_from_proto(s.profile),
                                       s.allocation_id, s.job_id) for s in message.slots),
                      message.version)


def registration_from_proto(message: Any) -> TaskExecutorRegistration:
    return TaskExecutorRegistration(location_from_proto(message.location),
                                    slot_report_from_proto(message.slot_report),
                                    resource_spec_from_proto(message.total_resources)
                                    if message.HasField("total_resources") else None,
                                    message.worker_spec)


def slot_request_from_proto(message: Any) -> SlotRequest:
    return SlotRequest(message.allocation_id, message.job_id, message.job_master_id,
                       message.job_master_address, resource_spec_from_proto(message.profile))


def overview_to_proto(overview: ClusterOverview) -> resourcemanager_pb2.ClusterOverview:
    message = resourcemanager_pb2.ClusterOverview(
        pending_workers=overview.pending_workers,
        pending_slot_requests=overview.pending_slot_requests)
    for worker in overview.workers:
        info = message.workers.add(
            resource_id=worker.resource_id, worker_spec=worker.worker_spec,
            num_slots=worker.num_slots, free_slots=worker.free_slots,
            rpc_address=worker.rpc_address, data_address=worker.data_address)
        if worker.slot_profile is not None:
            fill_resource_spec(worker.slot_profile, info.slot_profile)
    message.workers_started_per_spec.update(overview.workers_started_per_spec)
    return message
