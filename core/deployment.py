"""What a TaskExecutor needs to run one attempt (Flink's TaskDeploymentDescriptor).

An ALL_TO_ALL input's producer locations are the same for every consumer, so they
travel serialized (``InputGateDescriptor.shuffle_descriptors``, the wire form of
``ShuffleDescriptors`` made by ``yarnflow.rpc.codec``) and one serialization serves
all P consumers: deploying a P x P shuffle stays O(P) work, as with Flink's cached
shuffle descriptors.
"""
from __future__ import annotations

from dataclasses import dataclass

from yarnflow.core.jobgraph import PartitionType, ShipStrategy


@dataclass(slots=True)
class ShuffleDescriptors:
    """Where each producer partition of one consumed partition group lives."""
    result_id: str
    data_addresses: tuple[str, ...]       # distinct producer executors
    resource_ids: tuple[str, ...]         # same order as data_addresses
    producer_location: tuple[int, ...]    # per producer partition: index into data_addresses
    producer_attempt: tuple[int, ...]     # per producer partition: its attempt number


@dataclass(slots=True)
class ResultPartitionDescriptor:
    """A result the task produces; its partition is the task's subtask index, so one
    descriptor serves every subtask of the vertex."""
    result_id: str
    num_subpartitions: int
    partition_type: PartitionType
    ship: ShipStrategy
    keys: tuple[str, ...] = ()


@dataclass(slots=True)
class InputGateDescriptor:
    input_index: int
    shuffle_descriptors: bytes            # a serialized ShuffleDescriptors, shared
    consumed_partitions: tuple[int, ...]  # POINTWISE: the partitions read; empty: all
    subpartition_index: int
    partition_type: PartitionType


@dataclass(slots=True)
class TaskDeploymentDescriptor:
    job_id: str
    job_master_id: str
    job_master_address: str
    vertex_id: str
    vertex_name: str
    subtask_index: int
    parallelism: int
    attempt_number: int
    attempt_id: str
    allocation_id: str
    operator: bytes                       # cloudpickled; only the executor unpickles it
    produced: tuple[ResultPartitionDescriptor, ...] = ()
    inputs: tuple[InputGateDescriptor, ...] = ()
