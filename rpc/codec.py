"""The model's wire form: JobGraphs, ResourceSpecs and the gateways' messages to and
from protobuf. The model (``yarnflow.core``) knows nothing of protobuf; this module is the
one place both meet, so the client and the ApplicationMaster cannot disagree on it."""
from __future__ import annotations

import json

import itertools
import zlib
from typing import TYPE_CHECKING, Any, Callable

from yarnflow.core.ids import JobID, JobMasterId
from yarnflow.core.deployment import (ConsumerRead, InputGateDescriptor, ResultPartitionDescriptor,
                                     SharedPart, ShuffleDescriptors, TaskDeploymentDescriptor,
                                     TaskInformation)
from yarnflow.core.estimates import Estimate
from yarnflow.core.history import JobDetailsCodec
from yarnflow.core.jobgraph import (AdaptiveJoin, JobGraph, JobVertex, PartitionType, ScheduleMode,
                                    ShipStrategy)
from yarnflow.core.messages import (ClusterOverview, OperatorMetrics, SlotOffer, SlotReport,
                                    SlotRequest, SlotStatus, TaskExecutionState,
                                    TaskExecutorLocation, TaskExecutorRegistration, TaskMetrics)
from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.details import (ExceptionEntry, JobDetails, SessionOverview,
                                   SpeculationOutcome, SpeculativeAttempt, SubtaskDetails,
                                   VertexDetails, VertexInput)
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import ExecutionState, JobStatus
from yarnflow.core.user_code import UserCode
from yarnflow.rpc.generated import (common_pb2, dispatcher_pb2, jobgraph_pb2, jobmaster_pb2,
                                    resourcemanager_pb2, taskexecutor_pb2)

if TYPE_CHECKING:
    from yarnflow.core.operators.base import Operator, OutputCommitter


def fill_resource_spec(spec: ResourceSpec, message: Any) -> None:
    """Write ``spec`` into a ``ResourceSpec`` message field (protobuf sub-messages are
    filled in place, not assigned)."""
    message.cpu, message.memory_mb, message.gpus = spec.cpu, spec.memory_mb, spec.gpus
    message.node_label = spec.node_label


def resource_spec_from_proto(message: Any) -> ResourceSpec:
    return ResourceSpec(message.cpu, message.memory_mb, message.gpus, message.node_label)


def jobgraph_to_proto(graph: JobGraph) -> jobgraph_pb2.JobGraph:
    message = jobgraph_pb2.JobGraph(job_id=graph.job_id, name=graph.name,
                                    schedule_mode=graph.schedule_mode.name,
                                    spark_overhead_mb=graph.spark_overhead_mb,
                                    job_configuration=graph.job_configuration)
    for vertex in graph.vertices.values():
        out = message.vertices.add(
            id=vertex.id, name=vertex.name, parallelism=vertex.parallelism or 0,
            slot_sharing_group=vertex.slot_sharing_group or "",
            co_location_group=vertex.co_location_group or "",
            operator=vertex.operator.serialized(), num_inputs=vertex.num_inputs,
            uses_spark=vertex.uses_spark, adaptive=vertex.adaptive,
            committer=vertex.committer.serialized() if vertex.committer else b"",
            collect=vertex.collect, operator_names=list(vertex.operator_names))
        if vertex.resources is not None:
            out.has_resources = True
            fill_resource_spec(vertex.resources, out.resources)
        if vertex.join is not None:
            out.has_join = True
            out.join_buildable[:] = vertex.join.buildable
            out.join_splittable[:] = vertex.join.splittable
            out.join_broadcast_threshold = vertex.join.broadcast_threshold
        if vertex.estimate is not None:
            if vertex.estimate.rows is not None:
                out.estimate_rows = vertex.estimate.rows
            if vertex.estimate.bytes is not None:
                out.estimate_bytes = vertex.estimate.bytes
            out.estimate_origin = vertex.estimate.origin
    for edge in graph.edges:
        message.edges.add(source=edge.source.id, target=edge.target.id,
                          target_input=edge.target_input,
                          distribution=int(edge.distribution), ship=int(edge.ship),
                          keys=list(edge.keys), partition_type=int(edge.partition_type),
                          source_operator=edge.source_operator)
    return message


def jobgraph_as_received(data: bytes) -> JobGraph:
    """A serialized JobGraph (a per-job application's launch payload, a session's stored
    job), rebuilt as the ApplicationMaster holds it: operators still bytes."""
    return jobgraph_from_proto(jobgraph_pb2.JobGraph.FromString(data), load_operators=False)


def jobgraph_from_proto(message: jobgraph_pb2.JobGraph, load_operators: bool = True) -> JobGraph:
    """Rebuild the graph. Operators and committers stay cloudpickle bytes unless
    ``load_operators``: what the ApplicationMaster runs of them it loads in one place
    (``yarnflow.appmaster.jobmaster.user_code``)."""
    graph = JobGraph(message.name, ScheduleMode(message.schedule_mode), JobID(message.job_id))
    graph.spark_overhead_mb = message.spark_overhead_mb
    graph.job_configuration = dict(message.job_configuration)
    for v in message.vertices:
        operator: UserCode[Operator] = UserCode.received(v.operator)
        committer: UserCode[OutputCommitter] | None = \
            UserCode.received(v.committer) if v.committer else None
        if load_operators:
            operator.load()
            if committer is not None:
                committer.load()
        graph.add_vertex(JobVertex(
            name=v.name, operator=operator, parallelism=v.parallelism or None,
            resources=resource_spec_from_proto(v.resources) if v.has_resources else None,
            slot_sharing_group=v.slot_sharing_group or None,
            co_location_group=v.co_location_group or None, num_inputs=v.num_inputs, id=v.id,
            uses_spark=v.uses_spark, adaptive=v.adaptive,
            join=AdaptiveJoin(tuple(v.join_buildable), tuple(v.join_splittable),
                              v.join_broadcast_threshold) if v.has_join else None,
            committer=committer,
            estimate=Estimate(v.estimate_rows if v.HasField("estimate_rows") else None,
                              v.estimate_bytes if v.HasField("estimate_bytes") else None,
                              v.estimate_origin),
            collect=v.collect, operator_names=tuple(v.operator_names)))
    for e in message.edges:
        graph.connect(graph.vertices[e.source], graph.vertices[e.target], ShipStrategy(e.ship),
                      e.keys, PartitionType(e.partition_type), e.target_input,
                      e.source_operator)
    return graph


def as_received(graph: JobGraph) -> JobGraph:
    """The graph as an ApplicationMaster receives it, operators as cloudpickle bytes: a
    local run hands its JobMaster the same thing a YARN one does."""
    if not any(v.operator.loaded for v in graph.vertices.values()):
        return graph
    return jobgraph_from_proto(jobgraph_to_proto(graph), load_operators=False)


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
                       message.job_master_address, resource_spec_from_proto(message.profile),
                       tuple(message.preferred_hosts), message.exact, message.wanted)


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


def fill_location(location: TaskExecutorLocation, message: Any) -> None:
    message.resource_id, message.host = location.resource_id, location.host
    message.rpc_address, message.data_address = location.rpc_address, location.data_address


def fill_slot_report(report: SlotReport, message: Any) -> None:
    message.version = report.version
    for slot in report.slots:
        status = message.slots.add(slot_index=slot.slot_index, allocation_id=slot.allocation_id,
                                   job_id=slot.job_id)
        fill_resource_spec(slot.profile, status.profile)


def registration_to_proto(registration: TaskExecutorRegistration
                          ) -> resourcemanager_pb2.RegisterTaskExecutorRequest:
    message = resourcemanager_pb2.RegisterTaskExecutorRequest(worker_spec=registration.worker_spec)
    fill_location(registration.location, message.location)
    fill_slot_report(registration.slot_report, message.slot_report)
    if registration.total_resources is not None:
        fill_resource_spec(registration.total_resources, message.total_resources)
    return message


def slot_offer_from_proto(message: Any) -> SlotOffer:
    return SlotOffer(message.allocation_id, message.slot_index,
                     resource_spec_from_proto(message.profile), message.worker_spec)


def fill_metrics(metrics: TaskMetrics, message: Any) -> None:
    message.records_in, message.records_out = metrics.records_in, metrics.records_out
    message.bytes_in, message.bytes_out = metrics.bytes_in, metrics.bytes_out
    message.duration_s = metrics.duration_s
    message.records_in_per_input[:] = metrics.records_in_per_input
    message.inputs_done, message.inputs_total = metrics.inputs_done, metrics.inputs_total
    for sizes in metrics.produced_bytes:
        message.produced_bytes.add(subpartition_bytes=sizes)
    for op in metrics.operators:
        message.operators.add(name=op.name, records_in=op.records_in, records_out=op.records_out,
                              bytes_in=op.bytes_in, bytes_out=op.bytes_out,
                              finished=op.finished)
    message.key_range[:] = metrics.key_range
    message.spilled_bytes, message.spill_files = metrics.spilled_bytes, metrics.spill_files
    if metrics.watermark is not None:
        message.watermark = metrics.watermark
    if metrics.lag is not None:
        message.lag = metrics.lag
    message.counters.update(metrics.counters)


def metrics_from_proto(m: Any) -> TaskMetrics:
    return TaskMetrics(m.records_in, m.records_out, m.bytes_in, m.bytes_out, m.duration_s,
                       tuple(m.records_in_per_input), m.inputs_done, m.inputs_total,
                       tuple(tuple(p.subpartition_bytes) for p in m.produced_bytes),
                       tuple(OperatorMetrics(o.name, o.records_in, o.records_out, o.bytes_in,
                                             o.bytes_out, o.finished) for o in m.operators),
                       tuple(m.key_range), m.spilled_bytes, m.spill_files,
                       m.watermark if m.HasField("watermark") else None,
                       m.lag if m.HasField("lag") else None, dict(m.counters))


def fill_blocked_node(node: BlockedNode, message: Any) -> None:
    message.host, message.cause, message.since, message.until = \
        node.host, node.cause, node.since, node.until


def blocked_node_from_proto(m: Any) -> BlockedNode:
    return BlockedNode(m.host, m.cause, m.since, m.until)


def task_execution_state_to_proto(job_master_id: JobMasterId, update: TaskExecutionState
                                  ) -> jobmaster_pb2.TaskExecutionState:
    message = jobmaster_pb2.TaskExecutionState(
        job_master_id=job_master_id, attempt_id=update.attempt_id, state=int(update.state),
        error=update.error, error_detail=update.error_detail,
        upstream_failure=update.upstream_failure, non_recoverable=update.non_recoverable,
        collected=update.collected)
    if update.metrics is not None:
        fill_metrics(update.metrics, message.metrics)
    return message


def task_execution_state_from_proto(message: Any) -> TaskExecutionState:
    metrics = None
    if message.HasField("metrics"):
        metrics = metrics_from_proto(message.metrics)
    return TaskExecutionState(message.attempt_id, ExecutionState(message.state), message.error,
                              message.error_detail, message.upstream_failure, metrics,
                              message.non_recoverable, message.collected)


# Shuffle descriptors above this many bytes are compressed (Flink compresses them too):
# a P-producer group is mostly runs of equal locations and attempt numbers.
_COMPRESS_ABOVE = 512
_PLAIN, _ZLIB = b"\x00", b"\x01"


def shuffle_descriptors_to_bytes(descriptors: ShuffleDescriptors) -> bytes:
    locations = descriptors.producer_location
    data: bytes = taskexecutor_pb2.ShuffleDescriptors(
        result_id=descriptors.result_id, data_addresses=descriptors.data_addresses,
        producer_location_delta=[b - a for a, b in zip((0, *locations), locations)],
        producer_attempt=descriptors.producer_attempt,
        consumer_reads=[n for read in descriptors.consumer_reads
                        for n in (read.partitions.start, read.partitions.stop,
                                  read.subpartitions.start, read.subpartitions.stop,
                                  read.slice, read.slices)]
    ).SerializeToString()
    if len(data) > _COMPRESS_ABOVE:
        return _ZLIB + zlib.compress(data)
    return _PLAIN + data


def shuffle_descriptors_from_bytes(data: bytes) -> ShuffleDescriptors:
    body = zlib.decompress(data[1:]) if data[:1] == _ZLIB else data[1:]
    m = taskexecutor_pb2.ShuffleDescriptors.FromString(body)
    flat = m.consumer_reads
    return ShuffleDescriptors(m.result_id, tuple(m.data_addresses),
                              tuple(itertools.accumulate(m.producer_location_delta)),
                              tuple(m.producer_attempt),
                              tuple(ConsumerRead(range(flat[i], flat[i + 1]),
                                                 range(flat[i + 2], flat[i + 3]),
                                                 flat[i + 4], flat[i + 5])
                                    for i in range(0, len(flat), 6)))


def task_information_to_bytes(info: TaskInformation) -> bytes:
    """The vertex's fields of a ``TaskDeploymentDescriptor`` message, which an executor
    merges with each subtask's own (a concatenation of messages parses as one)."""
    message = taskexecutor_pb2.TaskDeploymentDescriptor(
        job_id=info.job_id, job_master_id=info.job_master_id,
        job_master_address=info.job_master_address, vertex_id=info.vertex_id,
        vertex_name=info.vertex_name, parallelism=info.parallelism,
        operator=info.operator.serialized())
    if info.build_input >= 0:
        message.build_input = info.build_input
    if info.batch_rows > 0:
        message.batch_rows = info.batch_rows
    if info.streaming:
        message.streaming = True
        message.max_parallelism = info.max_parallelism
    for p in info.produced:
        message.produced.add(result_id=p.result_id, num_subpartitions=p.num_subpartitions,
                             partition_type=p.partition_type.value, ship=p.ship.value,
                             keys=p.keys, store=p.store, key_groups=p.key_groups)
    data: bytes = message.SerializeToString()
    return data


def tdd_to_bytes(tdd: TaskDeploymentDescriptor) -> bytes:
    """The descriptor's wire form, a serialized ``TaskDeploymentDescriptor`` message.

    Runs once per subtask of a deployment (10,000 times at parallelism 10,000). Shared
    parts go by key, and in full only as ``tdd.carried``; a gate's fields are serialized
    once and kept on the gate, which the consumers of an ALL_TO_ALL input share. A
    concatenation of protobuf messages parses as one message with the fields of all of
    them, repeated fields in order, so the executor parses the whole as usual.
    """
    info = tdd.info
    if info.part is None:
        raise ValueError(f"the TaskInformation of {info.vertex_name} has no wire form: it is "
                         "made once per vertex (scheduler.deployment.task_information)")
    parts = [taskexecutor_pb2.TaskDeploymentDescriptor(
        subtask_index=tdd.subtask_index, attempt_number=tdd.attempt_number,
        attempt_id=tdd.attempt_id, allocation_id=tdd.allocation_id,
        task_information_key=info.part.key, restore=tdd.restore).SerializeToString()]
    for g in tdd.inputs:
        if g.wire is None:
            message = taskexecutor_pb2.TaskDeploymentDescriptor()
            if g.shared:
                message.inputs.add(input_index=g.input_index,
                                   shuffle_descriptors_key=g.shuffle_descriptors.key,
                                   partition_type=g.partition_type.value)
            else:
                message.inputs.add(input_index=g.input_index,
                                   shuffle_descriptors=g.shuffle_descriptors.data,
                                   consumed_partitions=g.consumed_partitions,
                                   partition_type=g.partition_type.value)
            g.wire = message.SerializeToString()
        parts.append(g.wire)
    if tdd.carried:
        message = taskexecutor_pb2.TaskDeploymentDescriptor()
        for part in tdd.carried:
            message.shared.add(key=part.key, data=part.data if not part.offloaded else b"",
                               offloaded=part.offloaded)
        parts.append(message.SerializeToString())
    return b"".join(parts)


def shared_parts_from_proto(m: Any) -> list[SharedPart]:
    """The shared parts a deployment carries."""
    return [SharedPart(p.key, p.data, p.offloaded) for p in m.shared]


def tdd_from_proto(m: Any, shared: Callable[[str], bytes]) -> TaskDeploymentDescriptor:
    """``shared`` gives the bytes of a shared part by key (the executor's cache of them)."""
    info_key = m.task_information_key
    v = taskexecutor_pb2.TaskDeploymentDescriptor.FromString(shared(info_key))
    info = TaskInformation(
        v.job_id, v.job_master_id, v.job_master_address, v.vertex_id, v.vertex_name,
        v.parallelism, UserCode.received(v.operator),
        tuple(ResultPartitionDescriptor(p.result_id, p.num_subpartitions,
                                        PartitionType(p.partition_type), ShipStrategy(p.ship),
                                        tuple(p.keys), p.store, p.key_groups)
              for p in v.produced),
        build_input=v.build_input if v.HasField("build_input") else -1,
        batch_rows=v.batch_rows if v.HasField("batch_rows") else 0,
        streaming=v.streaming, max_parallelism=v.max_parallelism)
    return TaskDeploymentDescriptor(
        info, m.subtask_index, m.attempt_number, m.attempt_id, m.allocation_id,
        tuple(InputGateDescriptor(
            g.input_index,
            SharedPart(g.shuffle_descriptors_key, shared(g.shuffle_descriptors_key))
            if g.shuffle_descriptors_key else SharedPart("", g.shuffle_descriptors),
            tuple(g.consumed_partitions), PartitionType(g.partition_type))
              for g in m.inputs), restore=m.restore)


_JOB_STATUS_TO_WIRE: dict[JobStatus, int] = {
    status: common_pb2.JobStatus.Value(f"JOB_{status.name}") for status in JobStatus}
_JOB_STATUS_FROM_WIRE: dict[int, JobStatus] = {v: k for k, v in _JOB_STATUS_TO_WIRE.items()}


def job_status_from_proto(value: int) -> JobStatus:
    return _JOB_STATUS_FROM_WIRE[value]


def job_details_to_proto(details: JobDetails) -> jobmaster_pb2.JobDetails:
    message = jobmaster_pb2.JobDetails(
        job_id=details.job_id, name=details.name, status=_JOB_STATUS_TO_WIRE[details.status],
        start_time=details.start_time, end_time=details.end_time, failure=details.failure,
        failure_detail=details.failure_detail, restarts=details.restarts,
        application_attempt=details.application_attempt)
    for node in details.blocked_hosts:
        fill_blocked_node(node, message.blocked_hosts.add())
    message.warnings.extend(details.warnings)
    if details.checkpoints:
        message.checkpoints = json.dumps(details.checkpoints)
    for a in details.speculations:
        message.speculations.add(task=a.task, attempt=a.attempt, original_attempt=a.original_attempt,
                                 original_host=a.original_host, started=a.started, reason=a.reason,
                                 host=a.host, outcome=a.outcome.value, note=a.note)
    for x in details.exceptions:
        message.exceptions.add(timestamp=x.timestamp, task=x.task, attempt=x.attempt,
                               resource_id=x.resource_id, host=x.host, cause=x.cause)
    for vertex in details.vertices:
        out = message.vertices.add(id=vertex.id, name=vertex.name, parallelism=vertex.parallelism,
                                   splits_total=vertex.splits_total, decision=vertex.decision,
                                   operators=vertex.operators)
        for i in vertex.inputs:
            out.inputs.add(producer=i.producer, ship=i.ship)
        for s in vertex.subtasks:
            sub = out.subtasks.add(index=s.index, state=s.state.value, attempt=s.attempt,
                                   resource_id=s.resource_id, allocation_id=s.allocation_id,
                                   error=s.error, splits_local=s.splits_local,
                                   splits_remote=s.splits_remote, host=s.host,
                                   worker_spec=s.worker_spec)
            if s.slot_profile is not None:
                fill_resource_spec(s.slot_profile, sub.slot_profile)
            sub.state_timestamps.update(s.state_timestamps)
            fill_metrics(s.metrics, sub.metrics)
    return message


def job_details_from_proto(message: Any) -> JobDetails:
    # an archive written before the status enum names it in legacy_status
    status = JobStatus(message.legacy_status) if message.legacy_status \
        else job_status_from_proto(message.status)
    return JobDetails(
        message.job_id, message.name, status, message.start_time, message.end_time,
        [VertexDetails(v.id, v.name, v.parallelism, [SubtaskDetails(
            s.index, ExecutionState(s.state), s.attempt, s.resource_id, s.allocation_id,
            metrics_from_proto(s.metrics), s.error, dict(s.state_timestamps), s.splits_local,
            s.splits_remote, s.host,
            resource_spec_from_proto(s.slot_profile) if s.HasField("slot_profile") else None,
            s.worker_spec)
            for s in v.subtasks], [VertexInput(i.producer, i.ship) for i in v.inputs],
            v.splits_total, v.decision, list(v.operators))
         for v in message.vertices],
        message.failure, message.failure_detail, message.restarts,
        [ExceptionEntry(x.timestamp, x.task, x.attempt, x.resource_id, x.host, x.cause)
         for x in message.exceptions], max(1, message.application_attempt),
        [blocked_node_from_proto(n) for n in message.blocked_hosts],
        [SpeculativeAttempt(a.task, a.attempt, a.original_attempt, a.original_host, a.started,
                            a.reason, a.host, SpeculationOutcome(a.outcome), a.note)
         for a in message.speculations],
        list(message.warnings), json.loads(message.checkpoints) if message.checkpoints else {})


def session_overview_to_proto(overview: SessionOverview) -> dispatcher_pb2.SessionOverview:
    return dispatcher_pb2.SessionOverview(
        history_dir=overview.history_dir, container_sizes=overview.container_sizes,
        executors=overview.executors, free_slots=overview.free_slots,
        total_slots=overview.total_slots, running_jobs=overview.running_jobs,
        finished_jobs=overview.finished_jobs)


def session_overview_from_proto(m: Any) -> SessionOverview:
    return SessionOverview(m.history_dir, m.container_sizes, m.executors, m.free_slots,
                           m.total_slots, m.running_jobs, m.finished_jobs)


def _job_details_to_bytes(details: JobDetails) -> bytes:
    return bytes(job_details_to_proto(details).SerializeToString())


def _job_details_from_bytes(data: bytes) -> JobDetails:
    return job_details_from_proto(jobmaster_pb2.JobDetails.FromString(data))


# what a job's details are in the history archive (yarnflow.core.history)
JOB_DETAILS = JobDetailsCodec(_job_details_to_bytes, _job_details_from_bytes)
