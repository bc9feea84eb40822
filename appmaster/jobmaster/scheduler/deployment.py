"""Task deployment descriptors: everything a TaskExecutor needs to run one attempt.

The producer locations of an ALL_TO_ALL input are serialized once per consumed
partition group and the same bytes go into every consumer's descriptor (Flink 1.14's
cached shuffle descriptors), so deploying a P × P shuffle is O(P) work, not O(P²).
"""
from __future__ import annotations

from yarnflow.appmaster.jobmaster.executiongraph import (ConsumedPartitionGroup, Execution,
                                                         IntermediateResult)
from yarnflow.core.deployment import (InputGateDescriptor, ResultPartitionDescriptor,
                                     ShuffleDescriptors, TaskDeploymentDescriptor)
from yarnflow.core.jobgraph import DistributionPattern
from yarnflow.rpc.codec import shuffle_descriptors_to_bytes


def shuffle_descriptors(group: ConsumedPartitionGroup) -> bytes:
    """Where each producer partition of ``group`` lives; cached on the group."""
    if group.cached_descriptors is not None:
        return group.cached_descriptors
    result = group.result
    addresses: dict[str, int] = {}
    resource_ids: list[str] = []
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
            resource_ids.append(location.resource_id)
        locations.append(index)
        attempts.append(execution.attempt_number)
    data = shuffle_descriptors_to_bytes(ShuffleDescriptors(
        result.id, tuple(addresses), tuple(resource_ids), tuple(locations), tuple(attempts)))
    group.cached_descriptors = data
    return data


def invalidate_descriptors(result: IntermediateResult) -> None:
    """A producer moved (redeployed): consumers must see the new location."""
    if result.all_consumers_group is not None:
        result.all_consumers_group.cached_descriptors = None
    for vertex in result.consumer.task_vertices:
        for group in vertex.consumed:
            if group.result is result:
                group.cached_descriptors = None


def build_descriptor(execution: Execution, job_master_id: str,
                     job_master_address: str) -> TaskDeploymentDescriptor:
    vertex = execution.vertex
    ejv = vertex.job_vertex
    produced = ejv.produced_descriptors
    if produced is None:     # the same for every subtask: built once per vertex
        produced = ejv.produced_descriptors = tuple(ResultPartitionDescriptor(
            result.id, result.num_subpartitions, result.partition_type, result.ship,
            tuple(result.keys)) for result in ejv.produced)
    inputs = []
    for input_index, group in enumerate(vertex.consumed):
        all_to_all = group.result.distribution is DistributionPattern.ALL_TO_ALL
        inputs.append(InputGateDescriptor(
            input_index, shuffle_descriptors(group),
            () if all_to_all else tuple(group.partition_indexes),
            vertex.subtask_index if all_to_all else 0, group.result.partition_type))
    return TaskDeploymentDescriptor(
        ejv.graph.job_id, job_master_id, job_master_address, ejv.id, ejv.name,
        vertex.subtask_index, ejv.parallelism, execution.attempt_number, execution.attempt_id,
        execution.slot.allocation_id if execution.slot else "", ejv.operator_bytes,
        produced, tuple(inputs))
