"""Task deployment descriptors: everything a TaskExecutor needs to run one attempt.

The producer locations of an ALL_TO_ALL input are serialized once per consumed
partition group (Flink 1.14's cached shuffle descriptors), and a vertex's TaskInformation
once per vertex: both are ``SharedPart``s, which every consumer's descriptor names by
key and ``deployment_parts.DeploymentParts`` sends to each executor once. Deploying a
P × P shuffle is O(P) work, not O(P²).
"""
from __future__ import annotations

from yarnflow.core.ids import AllocationID, JobMasterId
from yarnflow.appmaster.jobmaster.executiongraph import (ConsumedPartitionGroup, Execution,
                                                         ExecutionJobVertex, IntermediateResult)
from yarnflow.core.deployment import (ConsumerRead, InputGateDescriptor, ResultPartitionDescriptor,
                                     SharedPart, ShuffleDescriptors, TaskDeploymentDescriptor,
                                     TaskInformation, stored_address)
from yarnflow.core.jobgraph import DistributionPattern, ShipStrategy
from yarnflow.rpc.codec import shuffle_descriptors_to_bytes, task_information_to_bytes


def shuffle_descriptors(group: ConsumedPartitionGroup) -> SharedPart:
    """Where each producer partition of ``group`` lives; cached on the group."""
    if group.cached_descriptors is not None:
        return group.cached_descriptors
    result = group.result
    if result.store:       # on the cluster file system: read there, whoever wrote it
        part = group.cached_descriptors = _part(group, ShuffleDescriptors(
            result.id, (stored_address(result.store),), (0,) * len(group),
            tuple(p.producer.current.attempt_number for p in group.partitions()),
            _reads(group)))
        return part
    addresses: dict[str, int] = {}
    locations: list[int] = []
    attempts: list[int] = []
    for partition in group.partitions():
        execution = partition.producer.current
        slot = execution.slot
        if slot is None:
            raise RuntimeError(f"cannot deploy a consumer of {partition.producer}: the producer "
                               "has no slot yet")
        location = slot.location
        index = addresses.get(location.data_address)
        if index is None:
            index = addresses[location.data_address] = len(addresses)
        locations.append(index)
        attempts.append(execution.attempt_number)
    part = group.cached_descriptors = _part(group, ShuffleDescriptors(
        result.id, tuple(addresses), tuple(locations), tuple(attempts), _reads(group)))
    return part


def _reads(group: ConsumedPartitionGroup) -> tuple[ConsumerRead, ...]:
    """An adaptive consumer's reads travel with the group's shared descriptors: sent once
    per executor, not once per subtask."""
    if group.result.distribution is DistributionPattern.ALL_TO_ALL:
        return group.result.consumer_reads
    return ()


def _part(group: ConsumedPartitionGroup, descriptors: ShuffleDescriptors) -> SharedPart:
    """ALL_TO_ALL descriptors are shared by key; a POINTWISE consumer's own go inline."""
    data = shuffle_descriptors_to_bytes(descriptors)
    if group.result.distribution is DistributionPattern.ALL_TO_ALL:
        return SharedPart.of(data)
    return SharedPart("", data)


def invalidate_descriptors(result: IntermediateResult) -> None:
    """A producer moved (redeployed): consumers must see the new location."""
    if result.all_consumers_group is not None:
        result.all_consumers_group.cached_descriptors = None
    for vertex in result.consumer.task_vertices:
        for group in vertex.consumed:
            if group.result is result:
                group.cached_descriptors = None


def task_information(vertex: ExecutionJobVertex, job_master_id: JobMasterId,
                     job_master_address: str, batch_rows: int = 0,
                     max_parallelism: int = 0) -> TaskInformation:
    """The vertex's TaskInformation, built once per JobMaster and shared by its subtasks.
    ``max_parallelism`` > 0: an unbounded job's, whose HASH exchanges go by key group."""
    info = vertex.task_information
    if info is None or info.job_master_id != job_master_id:
        info = vertex.task_information = TaskInformation(
            vertex.graph.job_id, job_master_id, job_master_address, vertex.id, vertex.name,
            vertex.parallelism, vertex.operator,
            tuple(ResultPartitionDescriptor(result.id, result.num_subpartitions,
                                            result.partition_type, result.ship,
                                            tuple(result.keys), result.store,
                                            max_parallelism if result.ship is ShipStrategy.HASH
                                            else 0)
                  for result in vertex.produced),
            build_input=getattr(vertex.decision, "build_input", -1), batch_rows=batch_rows,
            streaming=max_parallelism > 0, max_parallelism=max_parallelism)
        info.part = SharedPart.of(task_information_to_bytes(info))
    return info


def input_gate(input_index: int, group: ConsumedPartitionGroup) -> InputGateDescriptor:
    """An ALL_TO_ALL group's gate is cached with its shuffle descriptors: every consumer
    gets the same object until a producer moves."""
    descriptors = shuffle_descriptors(group)
    if group.result.distribution is not DistributionPattern.ALL_TO_ALL:
        return InputGateDescriptor(input_index, descriptors, tuple(group.partition_indexes),
                                   group.result.partition_type)
    gate = group.cached_gate
    if gate is None or gate.shuffle_descriptors is not descriptors \
            or gate.input_index != input_index:
        gate = group.cached_gate = InputGateDescriptor(input_index, descriptors, (),
                                                       group.result.partition_type)
    return gate


def build_descriptor(execution: Execution, job_master_id: JobMasterId,
                     job_master_address: str, batch_rows: int = 0, max_parallelism: int = 0,
                     restore: bytes = b"") -> TaskDeploymentDescriptor:
    vertex = execution.vertex
    return TaskDeploymentDescriptor(
        task_information(vertex.job_vertex, job_master_id, job_master_address, batch_rows,
                         max_parallelism),
        vertex.subtask_index, execution.attempt_number, execution.attempt_id,
        execution.slot.allocation_id if execution.slot else AllocationID(""),
        tuple(input_gate(i, group) for i, group in enumerate(vertex.consumed)),
        restore=restore)
