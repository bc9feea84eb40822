import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RegisterTaskExecutorRequest(_message.Message):
    __slots__ = ("location", "slot_report", "total_resources", "worker_spec")
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    SLOT_REPORT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    WORKER_SPEC_FIELD_NUMBER: _ClassVar[int]
    location: _common_pb2.TaskExecutorLocation
    slot_report: _common_pb2.SlotReport
    total_resources: _common_pb2.ResourceSpec
    worker_spec: str
    def __init__(self, location: _Optional[_Union[_common_pb2.TaskExecutorLocation, _Mapping]] = ..., slot_report: _Optional[_Union[_common_pb2.SlotReport, _Mapping]] = ..., total_resources: _Optional[_Union[_common_pb2.ResourceSpec, _Mapping]] = ..., worker_spec: _Optional[str] = ...) -> None: ...

class RegistrationResponse(_message.Message):
    __slots__ = ("accepted", "resource_manager_id", "reason")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    resource_manager_id: str
    reason: str
    def __init__(self, accepted: _Optional[bool] = ..., resource_manager_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class TaskExecutorHeartbeat(_message.Message):
    __slots__ = ("resource_manager_id", "resource_id", "slot_report", "holds_partitions")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    SLOT_REPORT_FIELD_NUMBER: _ClassVar[int]
    HOLDS_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    resource_id: str
    slot_report: _common_pb2.SlotReport
    holds_partitions: bool
    def __init__(self, resource_manager_id: _Optional[str] = ..., resource_id: _Optional[str] = ..., slot_report: _Optional[_Union[_common_pb2.SlotReport, _Mapping]] = ..., holds_partitions: _Optional[bool] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("known",)
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    known: bool
    def __init__(self, known: _Optional[bool] = ...) -> None: ...

class RegisterJobMasterRequest(_message.Message):
    __slots__ = ("job_id", "job_master_id", "address")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    job_master_id: str
    address: str
    def __init__(self, job_id: _Optional[str] = ..., job_master_id: _Optional[str] = ..., address: _Optional[str] = ...) -> None: ...

class RegisterJobMasterResponse(_message.Message):
    __slots__ = ("resource_manager_id",)
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    def __init__(self, resource_manager_id: _Optional[str] = ...) -> None: ...

class SlotRequest(_message.Message):
    __slots__ = ("resource_manager_id", "job_id", "job_master_id", "allocation_id", "profile", "job_master_address", "preferred_hosts", "exact", "wanted")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_HOSTS_FIELD_NUMBER: _ClassVar[int]
    EXACT_FIELD_NUMBER: _ClassVar[int]
    WANTED_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    job_id: str
    job_master_id: str
    allocation_id: str
    profile: _common_pb2.ResourceSpec
    job_master_address: str
    preferred_hosts: _containers.RepeatedScalarFieldContainer[str]
    exact: bool
    wanted: int
    def __init__(self, resource_manager_id: _Optional[str] = ..., job_id: _Optional[str] = ..., job_master_id: _Optional[str] = ..., allocation_id: _Optional[str] = ..., profile: _Optional[_Union[_common_pb2.ResourceSpec, _Mapping]] = ..., job_master_address: _Optional[str] = ..., preferred_hosts: _Optional[_Iterable[str]] = ..., exact: _Optional[bool] = ..., wanted: _Optional[int] = ...) -> None: ...

class CancelSlotRequestMessage(_message.Message):
    __slots__ = ("resource_manager_id", "job_master_id", "allocation_id")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    job_master_id: str
    allocation_id: str
    def __init__(self, resource_manager_id: _Optional[str] = ..., job_master_id: _Optional[str] = ..., allocation_id: _Optional[str] = ...) -> None: ...

class BlockedNodes(_message.Message):
    __slots__ = ("resource_manager_id", "job_master_id", "nodes")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    job_master_id: str
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.BlockedNode]
    def __init__(self, resource_manager_id: _Optional[str] = ..., job_master_id: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[_common_pb2.BlockedNode, _Mapping]]] = ...) -> None: ...

class BlockedHosts(_message.Message):
    __slots__ = ("hosts",)
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    hosts: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, hosts: _Optional[_Iterable[str]] = ...) -> None: ...

class SlotAvailable(_message.Message):
    __slots__ = ("resource_manager_id", "resource_id", "slot_index", "allocation_id")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    SLOT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    resource_id: str
    slot_index: int
    allocation_id: str
    def __init__(self, resource_manager_id: _Optional[str] = ..., resource_id: _Optional[str] = ..., slot_index: _Optional[int] = ..., allocation_id: _Optional[str] = ...) -> None: ...

class DisconnectRequest(_message.Message):
    __slots__ = ("resource_manager_id", "id", "job_master_id", "reason")
    RESOURCE_MANAGER_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    resource_manager_id: str
    id: str
    job_master_id: str
    reason: str
    def __init__(self, resource_manager_id: _Optional[str] = ..., id: _Optional[str] = ..., job_master_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ("resource_id", "worker_spec", "slot_profile", "num_slots", "free_slots", "rpc_address", "data_address")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_SPEC_FIELD_NUMBER: _ClassVar[int]
    SLOT_PROFILE_FIELD_NUMBER: _ClassVar[int]
    NUM_SLOTS_FIELD_NUMBER: _ClassVar[int]
    FREE_SLOTS_FIELD_NUMBER: _ClassVar[int]
    RPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DATA_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    worker_spec: str
    slot_profile: _common_pb2.ResourceSpec
    num_slots: int
    free_slots: int
    rpc_address: str
    data_address: str
    def __init__(self, resource_id: _Optional[str] = ..., worker_spec: _Optional[str] = ..., slot_profile: _Optional[_Union[_common_pb2.ResourceSpec, _Mapping]] = ..., num_slots: _Optional[int] = ..., free_slots: _Optional[int] = ..., rpc_address: _Optional[str] = ..., data_address: _Optional[str] = ...) -> None: ...

class ClusterOverview(_message.Message):
    __slots__ = ("workers", "pending_workers", "pending_slot_requests", "workers_started_per_spec")
    class WorkersStartedPerSpecEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    PENDING_WORKERS_FIELD_NUMBER: _ClassVar[int]
    PENDING_SLOT_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    WORKERS_STARTED_PER_SPEC_FIELD_NUMBER: _ClassVar[int]
    workers: _containers.RepeatedCompositeFieldContainer[WorkerInfo]
    pending_workers: int
    pending_slot_requests: int
    workers_started_per_spec: _containers.ScalarMap[str, int]
    def __init__(self, workers: _Optional[_Iterable[_Union[WorkerInfo, _Mapping]]] = ..., pending_workers: _Optional[int] = ..., pending_slot_requests: _Optional[int] = ..., workers_started_per_spec: _Optional[_Mapping[str, int]] = ...) -> None: ...
