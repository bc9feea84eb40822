"""Task deployment descriptors: everything a TaskExecutor needs to run one attempt.

The producer locations of an ALL_TO_ALL input are serialized once per consumed
partition group and the same bytes go into every consumer's descriptor (Flink 1.14's
cached shuffle descriptors), so deploying a P × P shuffle is O(P) work, not O(P²).
"""
from __future__ import annotations

from yarnflow.appmaster.jobmaster.executiongraph import (ConsumedPartitionGroup, Execution,
                                                         IntermediateResult)
from yarnflow.core.jobgraph import DistributionPattern
from yarnflow.rpc.generated import taskexecutor_pb2


def shuffle_descriptors(group: ConsumedPartitionGroup) -> bytes:
    """Where each producer partition of ``group`` lives; cached on the group."""
    if group.cached_descriptors is not None:
        return group.cached_descriptors
    result = group.result
    addresses: dict[str, int] = {}
    message = taskexecutor_pb2.ShuffleDescriptors(result_id=result.id)
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
            message.data_addresses.append(location.data_address)
            message.resource_ids.append(location.resource_id)
        locations.append(index)
        attempts.append(execution.attempt_number)
    message.producer_location.extend(locations)
    message.producer_attempt.extend(attempts)
    data = message.SerializeToString()
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
                     job_master_address: str) -> taskexecutor_pb2.TaskDeploymentDescriptor:
    vertex = execution.vertex
    ejv = vertex.job_vertex
    tdd = taskexecutor_pb2.TaskDeploymentDescriptor(
        job_id=ejv.graph.job_id, job_master_id=job_master_id,
        job_master_address=job_master_address, vertex_id=ejv.id, vertex_name=ejv.name,
        subtask_index=vertex.subtask_index, parallelism=ejv.parallelism,
        attempt_number=execution.attempt_number, attempt_id=execution.attempt_id,
        allocation_id=execution.slot.allocation_id if execution.slot else "",
        operator=ejv.operator_bytes)
    for result in ejv.produced:
        tdd.produced.add(result_id=result.id, partition_index=vertex.subtask_index,
                         num_subpartitions=result.num_subpartitions,
                         partition_type=int(result.partition_type), ship=int(result.ship),
                         keys=list(result.keys))
    for input_index, group in enumerate(vertex.consumed):
        all_to_all = group.result.distribution is DistributionPattern.ALL_TO_ALL
        gate = tdd.inputs.add(
            input_index=input_index, shuffle_descriptors=shuffle_descriptors(group),
            subpartition_index=vertex.subtask_index if all_to_all else 0,
            partition_type=int(group.result.partition_type))
        if not all_to_all:
            gate.consumed_partitions.extend(group.partition_indexes)
    return tdd
