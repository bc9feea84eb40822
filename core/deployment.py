"""What a TaskExecutor needs to run one attempt (Flink's TaskDeploymentDescriptor).

What the subtasks of a vertex are deployed with alike is one ``TaskInformation``
(Flink's JobInformation and TaskInformation), and an ALL_TO_ALL input's producer
locations are the same for every consumer (``ShuffleDescriptors``). Each is put in wire
form once for all of them, as a ``SharedPart`` named by a digest of its bytes, and is
sent to each executor once: a deployment names its shared parts by key and carries only
those its executor was not sent yet (Flink's cached shuffle descriptors, FLINK-21110, and
offloading to the blob server, FLINK-23005). Deploying a P x P shuffle on E executors
sends O(P + E x producers) bytes instead of O(P x producers). A digest of the content
names it, so a producer that moved makes new bytes and a new key: no consumer can read
a stale location from a cache.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobID, JobMasterId
from yarnflow.core.jobgraph import PartitionType, ShipStrategy
from yarnflow.core.user_code import UserCode

if TYPE_CHECKING:
    from yarnflow.core.operators.base import Operator


# The data address of a result on the cluster file system: its consumers read the files
# there, whichever executor wrote them and whether or not it still runs.
STORED_ADDRESS_PREFIX = "dfs+"


def stored_address(result_dir: str) -> str:
    return STORED_ADDRESS_PREFIX + result_dir


def stored_result_dir(data_address: str) -> str | None:
    """The directory a stored result's data address names; None for an executor's."""
    if data_address.startswith(STORED_ADDRESS_PREFIX):
        return data_address[len(STORED_ADDRESS_PREFIX):]
    return None


@dataclass(frozen=True, slots=True)
class SharedPart:
    """Serialized bytes that the deployments of many subtasks share, named by their digest."""
    key: str
    data: bytes = field(default=b"", repr=False)
    offloaded: str = ""    # sent instead of ``data``: the cluster file system's file of them

    @staticmethod
    def of(data: bytes) -> "SharedPart":
        return SharedPart(digest(data), data)


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(slots=True)
class ShuffleDescriptors:
    """Where each producer partition of one consumed partition group lives."""
    result_id: str
    # distinct producer executors' data servers (a consumer on the same executor knows
    # its own, and reads those partitions in memory), or a stored result
    data_addresses: tuple[str, ...]
    producer_location: tuple[int, ...]    # per producer partition: index into data_addresses
    producer_attempt: tuple[int, ...]     # per producer partition: its attempt number
    # adaptive batch execution: per consumer subtask, the producer partitions [a, b) of
    # this group and the subpartitions [c, d) of each that it reads; empty: every
    # producer, the subpartition of the consumer's own index
    consumer_reads: tuple["ConsumerRead", ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerRead:
    """What one consumer subtask reads of one input: contiguous producer partitions and,
    of each, contiguous subpartitions (Flink's IndexRange pair of an
    ExecutionVertexInputInfo); of those, the batches whose index is ``slice`` modulo
    ``slices`` (a skewed subpartition of one producer shared among several subtasks:
    every reader sees its batches in the order they were written)."""
    partitions: range
    subpartitions: range
    slice: int = 0
    slices: int = 1


@dataclass(slots=True)
class ResultPartitionDescriptor:
    """A result the task produces; its partition is the task's subtask index, so one
    descriptor serves every subtask of the vertex."""
    result_id: str
    num_subpartitions: int
    partition_type: PartitionType
    ship: ShipStrategy
    keys: tuple[str, ...] = ()
    store: str = ""      # BLOCKING on the cluster file system: the result's directory
    key_groups: int = 0  # a streaming HASH exchange: route by key group (max parallelism)


@dataclass(slots=True, eq=False)
class InputGateDescriptor:
    """One input of a task. An ALL_TO_ALL input's descriptor is one object shared by
    every consumer subtask; each reads its own subpartition of every producer."""
    input_index: int
    # serialized ShuffleDescriptors: ALL_TO_ALL's shared by key, POINTWISE's (key "") inline
    shuffle_descriptors: SharedPart
    consumed_partitions: tuple[int, ...]  # POINTWISE: the partitions read; empty: all
    partition_type: PartitionType
    # its wire form, made by yarnflow.rpc.codec at the first deployment that sends it
    wire: bytes | None = field(default=None, repr=False)

    @property
    def shared(self) -> bool:
        """ALL_TO_ALL: every consumer reads the same descriptors, sent once per executor."""
        return not self.consumed_partitions

    def subpartition_index(self, subtask_index: int) -> int:
        """ALL_TO_ALL: the consumer's own subpartition; POINTWISE: the only one."""
        return 0 if self.consumed_partitions else subtask_index


@dataclass(slots=True, eq=False)
class TaskInformation:
    """What every subtask of a vertex is deployed with alike: one object per vertex."""
    job_id: JobID
    job_master_id: JobMasterId
    job_master_address: str
    vertex_id: str
    vertex_name: str
    parallelism: int
    operator: UserCode[Operator]          # only the executor loads it
    produced: tuple[ResultPartitionDescriptor, ...] = ()
    # an adaptive join's build input, decided at run time (-1: as the operator was planned)
    build_input: int = -1
    # rows per batch its job's sources emit (pipeline.batch-rows, a job-level option: a
    # session's executors serve jobs that set their own); 0: the executor's
    batch_rows: int = 0
    # an unbounded job's task (a stream task), and its keyed state's key groups
    streaming: bool = False
    max_parallelism: int = 0
    # its wire form, made by the JobMaster once for all the vertex's deployments
    part: SharedPart | None = field(default=None, repr=False)


@dataclass(slots=True, eq=False)
class TaskDeploymentDescriptor:
    info: TaskInformation
    subtask_index: int
    attempt_number: int
    attempt_id: ExecutionAttemptID
    allocation_id: AllocationID
    inputs: tuple[InputGateDescriptor, ...] = ()
    # the shared parts this deployment carries because its executor was not sent them yet
    carried: tuple[SharedPart, ...] = ()
    # what the subtask restores from a completed checkpoint (``core/streaming/restore.py``)
    restore: bytes = b""

    def shared_parts(self) -> list[SharedPart]:
        """The parts it names by key: its TaskInformation's and its ALL_TO_ALL inputs'."""
        parts = [g.shuffle_descriptors for g in self.inputs if g.shared]
        if self.info.part is not None:
            parts.insert(0, self.info.part)
        return parts
