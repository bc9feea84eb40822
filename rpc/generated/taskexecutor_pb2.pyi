import common_pb2 as _common_pb2
import jobgraph_pb2 as _jobgraph_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RequestSlotMessage(_message.Message):
    __slots__ = ("resource_manager_id", "slot_index", "job_id", "allocation_id", "profile", "job_master_address", "job_master_id")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    SLOT_INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    slot_index: int
    job_id: str
    allocation_id: str
    profile: _common_pb2.ResourceSpec
    job_master_address: str
    job_master_id: str
    def __init__(self, resource_manager_id: _Optional[str] = ..., slot_index: _Optional[int] = ..., job_id: _Optional[str] = ..., allocation_id: _Optional[str] = ..., profile: _Optional[_Union[_common_pb2.ResourceSpec, _Mapping]] = ..., job_master_address: _Optional[str] = ..., job_master_id: _Optional[str] = ...) -> None: ...

class SlotAllocationReply(_message.Message):
    __slots__ = ("ok", "message", "report_version")
    OK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REPORT_VERSION_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    message: str
    report_version: int
    def __init__(self, ok: _Optional[bool] = ..., message: _Optional[str] = ..., report_version: _Optional[int] = ...) -> None: ...

class ResultPartitionDescriptor(_message.Message):
    __slots__ = ("result_id", "num_subpartitions", "partition_type", "ship", "keys", "store", "key_groups")
    RESULT_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_SUBPARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_TYPE_FIELD_NUMBER: _ClassVar[int]
    SHIP_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    KEY_GROUPS_FIELD_NUMBER: _ClassVar[int]
    result_id: str
    num_subpartitions: int
    partition_type: _jobgraph_pb2.PartitionType
    ship: _jobgraph_pb2.ShipStrategy
    keys: _containers.RepeatedScalarFieldContainer[str]
    store: str
    key_groups: int
    def __init__(self, result_id: _Optional[str] = ..., num_subpartitions: _Optional[int] = ..., partition_type: _Optional[_Union[_jobgraph_pb2.PartitionType, str]] = ..., ship: _Optional[_Union[_jobgraph_pb2.ShipStrategy, str]] = ..., keys: _Optional[_Iterable[str]] = ..., store: _Optional[str] = ..., key_groups: _Optional[int] = ...) -> None: ...

class ShuffleDescriptors(_message.Message):
    __slots__ = ("result_id", "data_addresses", "producer_attempt", "producer_location_delta", "consumer_reads")
    RESULT_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_LOCATION_DELTA_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_READS_FIELD_NUMBER: _ClassVar[int]
    result_id: str
    data_addresses: _containers.RepeatedScalarFieldContainer[str]
    producer_attempt: _containers.RepeatedScalarFieldContainer[int]
    producer_location_delta: _containers.RepeatedScalarFieldContainer[int]
    consumer_reads: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, result_id: _Optional[str] = ..., data_addresses: _Optional[_Iterable[str]] = ..., producer_attempt: _Optional[_Iterable[int]] = ..., producer_location_delta: _Optional[_Iterable[int]] = ..., consumer_reads: _Optional[_Iterable[int]] = ...) -> None: ...

class SharedPart(_message.Message):
    __slots__ = ("key", "data", "offloaded")
    KEY_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    OFFLOADED_FIELD_NUMBER: _ClassVar[int]
    key: str
    data: bytes
    offloaded: str
    def __init__(self, key: _Optional[str] = ..., data: _Optional[bytes] = ..., offloaded: _Optional[str] = ...) -> None: ...

class InputGateDescriptor(_message.Message):
    __slots__ = ("input_index", "shuffle_descriptors", "consumed_partitions", "partition_type", "shuffle_descriptors_key")
    INPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SHUFFLE_DESCRIPTORS_FIELD_NUMBER: _ClassVar[int]
    CONSUMED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_TYPE_FIELD_NUMBER: _ClassVar[int]
    SHUFFLE_DESCRIPTORS_KEY_FIELD_NUMBER: _ClassVar[int]
    input_index: int
    shuffle_descriptors: bytes
    consumed_partitions: _containers.RepeatedScalarFieldContainer[int]
    partition_type: _jobgraph_pb2.PartitionType
    shuffle_descriptors_key: str
    def __init__(self, input_index: _Optional[int] = ..., shuffle_descriptors: _Optional[bytes] = ..., consumed_partitions: _Optional[_Iterable[int]] = ..., partition_type: _Optional[_Union[_jobgraph_pb2.PartitionType, str]] = ..., shuffle_descriptors_key: _Optional[str] = ...) -> None: ...

class TaskDeploymentDescriptor(_message.Message):
    __slots__ = ("job_id", "job_master_id", "job_master_address", "vertex_id", "vertex_name", "subtask_index", "parallelism", "attempt_number", "attempt_id", "allocation_id", "operator", "produced", "inputs", "task_information_key", "shared", "build_input", "batch_rows", "streaming", "max_parallelism", "restore")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    VERTEX_ID_FIELD_NUMBER: _ClassVar[int]
    VERTEX_NAME_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_NUMBER_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    PRODUCED_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    TASK_INFORMATION_KEY_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    BUILD_INPUT_FIELD_NUMBER: _ClassVar[int]
    BATCH_ROWS_FIELD_NUMBER: _ClassVar[int]
    STREAMING_FIELD_NUMBER: _ClassVar[int]
    MAX_PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
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
    operator: bytes
    produced: _containers.RepeatedCompositeFieldContainer[ResultPartitionDescriptor]
    inputs: _containers.RepeatedCompositeFieldContainer[InputGateDescriptor]
    task_information_key: str
    shared: _containers.RepeatedCompositeFieldContainer[SharedPart]
    build_input: int
    batch_rows: int
    streaming: bool
    max_parallelism: int
    restore: bytes
    def __init__(self, job_id: _Optional[str] = ..., job_master_id: _Optional[str] = ..., job_master_address: _Optional[str] = ..., vertex_id: _Optional[str] = ..., vertex_name: _Optional[str] = ..., subtask_index: _Optional[int] = ..., parallelism: _Optional[int] = ..., attempt_number: _Optional[int] = ..., attempt_id: _Optional[str] = ..., allocation_id: _Optional[str] = ..., operator: _Optional[bytes] = ..., produced: _Optional[_Iterable[_Union[ResultPartitionDescriptor, _Mapping]]] = ..., inputs: _Optional[_Iterable[_Union[InputGateDescriptor, _Mapping]]] = ..., task_information_key: _Optional[str] = ..., shared: _Optional[_Iterable[_Union[SharedPart, _Mapping]]] = ..., build_input: _Optional[int] = ..., batch_rows: _Optional[int] = ..., streaming: _Optional[bool] = ..., max_parallelism: _Optional[int] = ..., restore: _Optional[bytes] = ...) -> None: ...

class CheckpointTrigger(_message.Message):
    __slots__ = ("job_master_id", "attempt_id", "checkpoint_id", "timestamp_ms", "kind", "location")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    attempt_id: str
    checkpoint_id: int
    timestamp_ms: int
    kind: str
    location: str
    def __init__(self, job_master_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., checkpoint_id: _Optional[int] = ..., timestamp_ms: _Optional[int] = ..., kind: _Optional[str] = ..., location: _Optional[str] = ...) -> None: ...

class CheckpointNotification(_message.Message):
    __slots__ = ("job_master_id", "attempt_id", "checkpoint_id", "completed")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    attempt_id: str
    checkpoint_id: int
    completed: bool
    def __init__(self, job_master_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., checkpoint_id: _Optional[int] = ..., completed: _Optional[bool] = ...) -> None: ...

class CancelTaskMessage(_message.Message):
    __slots__ = ("job_master_id", "attempt_id")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    attempt_id: str
    def __init__(self, job_master_id: _Optional[str] = ..., attempt_id: _Optional[str] = ...) -> None: ...

class CancelTaskResponse(_message.Message):
    __slots__ = ("known",)
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    known: bool
    def __init__(self, known: _Optional[bool] = ...) -> None: ...

class FreeSlotMessage(_message.Message):
    __slots__ = ("job_master_id", "allocation_id", "cause")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    allocation_id: str
    cause: str
    def __init__(self, job_master_id: _Optional[str] = ..., allocation_id: _Optional[str] = ..., cause: _Optional[str] = ...) -> None: ...

class ShutdownMessage(_message.Message):
    __slots__ = ("resource_manager_id", "reason")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    reason: str
    def __init__(self, resource_manager_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DelegationTokensMessage(_message.Message):
    __slots__ = ("resource_manager_id", "credentials")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    credentials: bytes
    def __init__(self, resource_manager_id: _Optional[str] = ..., credentials: _Optional[bytes] = ...) -> None: ...

class ReleasePartitionsMessage(_message.Message):
    __slots__ = ("job_master_id", "job_id")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    job_id: str
    def __init__(self, job_master_id: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...
