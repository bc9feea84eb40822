from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecutionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CREATED: _ClassVar[ExecutionState]
    SCHEDULED: _ClassVar[ExecutionState]
    DEPLOYING: _ClassVar[ExecutionState]
    INITIALIZING: _ClassVar[ExecutionState]
    RUNNING: _ClassVar[ExecutionState]
    FINISHED: _ClassVar[ExecutionState]
    CANCELING: _ClassVar[ExecutionState]
    CANCELED: _ClassVar[ExecutionState]
    FAILED: _ClassVar[ExecutionState]

class JobStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_CREATED: _ClassVar[JobStatus]
    JOB_RUNNING: _ClassVar[JobStatus]
    JOB_FAILING: _ClassVar[JobStatus]
    JOB_CANCELLING: _ClassVar[JobStatus]
    JOB_FINISHED: _ClassVar[JobStatus]
    JOB_FAILED: _ClassVar[JobStatus]
    JOB_CANCELED: _ClassVar[JobStatus]
CREATED: ExecutionState
SCHEDULED: ExecutionState
DEPLOYING: ExecutionState
INITIALIZING: ExecutionState
RUNNING: ExecutionState
FINISHED: ExecutionState
CANCELING: ExecutionState
CANCELED: ExecutionState
FAILED: ExecutionState
JOB_CREATED: JobStatus
JOB_RUNNING: JobStatus
JOB_FAILING: JobStatus
JOB_CANCELLING: JobStatus
JOB_FINISHED: JobStatus
JOB_FAILED: JobStatus
JOB_CANCELED: JobStatus

class ResourceSpec(_message.Message):
    __slots__ = ("cpu", "memory_mb", "gpus", "node_label")
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    NODE_LABEL_FIELD_NUMBER: _ClassVar[int]
    cpu: float
    memory_mb: int
    gpus: int
    node_label: str
    def __init__(self, cpu: _Optional[float] = ..., memory_mb: _Optional[int] = ..., gpus: _Optional[int] = ..., node_label: _Optional[str] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("ok", "message")
    OK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    message: str
    def __init__(self, ok: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TaskExecutorLocation(_message.Message):
    __slots__ = ("resource_id", "host", "rpc_address", "data_address")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    RPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DATA_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    host: str
    rpc_address: str
    data_address: str
    def __init__(self, resource_id: _Optional[str] = ..., host: _Optional[str] = ..., rpc_address: _Optional[str] = ..., data_address: _Optional[str] = ...) -> None: ...

class SlotStatus(_message.Message):
    __slots__ = ("slot_index", "profile", "allocation_id", "job_id")
    SLOT_INDEX_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    slot_index: int
    profile: ResourceSpec
    allocation_id: str
    job_id: str
    def __init__(self, slot_index: _Optional[int] = ..., profile: _Optional[_Union[ResourceSpec, _Mapping]] = ..., allocation_id: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...

class SlotReport(_message.Message):
    __slots__ = ("slots", "version")
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    slots: _containers.RepeatedCompositeFieldContainer[SlotStatus]
    version: int
    def __init__(self, slots: _Optional[_Iterable[_Union[SlotStatus, _Mapping]]] = ..., version: _Optional[int] = ...) -> None: ...

class TaskMetrics(_message.Message):
    __slots__ = ("records_in", "records_out", "bytes_in", "bytes_out", "duration_s", "records_in_per_input", "inputs_done", "inputs_total", "produced_bytes", "operators", "key_range", "spilled_bytes", "spill_files", "watermark", "lag", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    RECORDS_IN_FIELD_NUMBER: _ClassVar[int]
    RECORDS_OUT_FIELD_NUMBER: _ClassVar[int]
    BYTES_IN_FIELD_NUMBER: _ClassVar[int]
    BYTES_OUT_FIELD_NUMBER: _ClassVar[int]
    DURATION_S_FIELD_NUMBER: _ClassVar[int]
    RECORDS_IN_PER_INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUTS_DONE_FIELD_NUMBER: _ClassVar[int]
    INPUTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    PRODUCED_BYTES_FIELD_NUMBER: _ClassVar[int]
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    KEY_RANGE_FIELD_NUMBER: _ClassVar[int]
    SPILLED_BYTES_FIELD_NUMBER: _ClassVar[int]
    SPILL_FILES_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    records_in: int
    records_out: int
    bytes_in: int
    bytes_out: int
    duration_s: float
    records_in_per_input: _containers.RepeatedScalarFieldContainer[int]
    inputs_done: int
    inputs_total: int
    produced_bytes: _containers.RepeatedCompositeFieldContainer[ProducedBytes]
    operators: _containers.RepeatedCompositeFieldContainer[OperatorMetrics]
    key_range: _containers.RepeatedScalarFieldContainer[str]
    spilled_bytes: int
    spill_files: int
    watermark: int
    lag: int
    counters: _containers.ScalarMap[str, int]
    def __init__(self, records_in: _Optional[int] = ..., records_out: _Optional[int] = ..., bytes_in: _Optional[int] = ..., bytes_out: _Optional[int] = ..., duration_s: _Optional[float] = ..., records_in_per_input: _Optional[_Iterable[int]] = ..., inputs_done: _Optional[int] = ..., inputs_total: _Optional[int] = ..., produced_bytes: _Optional[_Iterable[_Union[ProducedBytes, _Mapping]]] = ..., operators: _Optional[_Iterable[_Union[OperatorMetrics, _Mapping]]] = ..., key_range: _Optional[_Iterable[str]] = ..., spilled_bytes: _Optional[int] = ..., spill_files: _Optional[int] = ..., watermark: _Optional[int] = ..., lag: _Optional[int] = ..., counters: _Optional[_Mapping[str, int]] = ...) -> None: ...

class OperatorMetrics(_message.Message):
    __slots__ = ("name", "records_in", "records_out", "bytes_in", "bytes_out", "finished")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RECORDS_IN_FIELD_NUMBER: _ClassVar[int]
    RECORDS_OUT_FIELD_NUMBER: _ClassVar[int]
    BYTES_IN_FIELD_NUMBER: _ClassVar[int]
    BYTES_OUT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    name: str
    records_in: int
    records_out: int
    bytes_in: int
    bytes_out: int
    finished: bool
    def __init__(self, name: _Optional[str] = ..., records_in: _Optional[int] = ..., records_out: _Optional[int] = ..., bytes_in: _Optional[int] = ..., bytes_out: _Optional[int] = ..., finished: _Optional[bool] = ...) -> None: ...

class ProducedBytes(_message.Message):
    __slots__ = ("subpartition_bytes",)
    SUBPARTITION_BYTES_FIELD_NUMBER: _ClassVar[int]
    subpartition_bytes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, subpartition_bytes: _Optional[_Iterable[int]] = ...) -> None: ...

class BlockedNode(_message.Message):
    __slots__ = ("host", "cause", "since", "until")
    HOST_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    host: str
    cause: str
    since: float
    until: float
    def __init__(self, host: _Optional[str] = ..., cause: _Optional[str] = ..., since: _Optional[float] = ..., until: _Optional[float] = ...) -> None: ...
