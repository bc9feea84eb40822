import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SlotOffer(_message.Message):
    __slots__ = ("allocation_id", "slot_index", "profile", "worker_spec")
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    SLOT_INDEX_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    WORKER_SPEC_FIELD_NUMBER: _ClassVar[int]
    allocation_id: str
    slot_index: int
    profile: _common_pb2.ResourceSpec
    worker_spec: str
    def __init__(self, allocation_id: _Optional[str] = ..., slot_index: _Optional[int] = ..., profile: _Optional[_Union[_common_pb2.ResourceSpec, _Mapping]] = ..., worker_spec: _Optional[str] = ...) -> None: ...

class OfferSlotsRequest(_message.Message):
    __slots__ = ("job_master_id", "location", "offers")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    OFFERS_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    location: _common_pb2.TaskExecutorLocation
    offers: _containers.RepeatedCompositeFieldContainer[SlotOffer]
    def __init__(self, job_master_id: _Optional[str] = ..., location: _Optional[_Union[_common_pb2.TaskExecutorLocation, _Mapping]] = ..., offers: _Optional[_Iterable[_Union[SlotOffer, _Mapping]]] = ...) -> None: ...

class OfferSlotsResponse(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, accepted: _Optional[_Iterable[str]] = ...) -> None: ...

class TaskExecutionState(_message.Message):
    __slots__ = ("job_master_id", "attempt_id", "state", "error", "error_detail", "metrics", "upstream_failure", "non_recoverable", "collected")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAIL_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_FAILURE_FIELD_NUMBER: _ClassVar[int]
    NON_RECOVERABLE_FIELD_NUMBER: _ClassVar[int]
    COLLECTED_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    attempt_id: str
    state: _common_pb2.ExecutionState
    error: str
    error_detail: str
    metrics: _common_pb2.TaskMetrics
    upstream_failure: bool
    non_recoverable: bool
    collected: bytes
    def __init__(self, job_master_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., state: _Optional[_Union[_common_pb2.ExecutionState, str]] = ..., error: _Optional[str] = ..., error_detail: _Optional[str] = ..., metrics: _Optional[_Union[_common_pb2.TaskMetrics, _Mapping]] = ..., upstream_failure: _Optional[bool] = ..., non_recoverable: _Optional[bool] = ..., collected: _Optional[bytes] = ...) -> None: ...

class InputSplitRequest(_message.Message):
    __slots__ = ("job_master_id", "vertex_id", "attempt_id", "request")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    VERTEX_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    vertex_id: str
    attempt_id: str
    request: int
    def __init__(self, job_master_id: _Optional[str] = ..., vertex_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., request: _Optional[int] = ...) -> None: ...

class InputSplitResponse(_message.Message):
    __slots__ = ("end", "split", "retry_after_s")
    END_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_S_FIELD_NUMBER: _ClassVar[int]
    end: bool
    split: bytes
    retry_after_s: float
    def __init__(self, end: _Optional[bool] = ..., split: _Optional[bytes] = ..., retry_after_s: _Optional[float] = ...) -> None: ...

class PartitionDataAvailable(_message.Message):
    __slots__ = ("job_master_id", "attempt_id", "result_id")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_ID_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    attempt_id: str
    result_id: str
    def __init__(self, job_master_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., result_id: _Optional[str] = ...) -> None: ...

class JobMasterHeartbeat(_message.Message):
    __slots__ = ("job_master_id", "resource_id", "running_attempts")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    RUNNING_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    resource_id: str
    running_attempts: _containers.RepeatedCompositeFieldContainer[TaskExecutionState]
    def __init__(self, job_master_id: _Optional[str] = ..., resource_id: _Optional[str] = ..., running_attempts: _Optional[_Iterable[_Union[TaskExecutionState, _Mapping]]] = ...) -> None: ...

class TaskProgress(_message.Message):
    __slots__ = ("job_master_id", "resource_id", "running_attempts")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    RUNNING_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    resource_id: str
    running_attempts: _containers.RepeatedCompositeFieldContainer[TaskExecutionState]
    def __init__(self, job_master_id: _Optional[str] = ..., resource_id: _Optional[str] = ..., running_attempts: _Optional[_Iterable[_Union[TaskExecutionState, _Mapping]]] = ...) -> None: ...

class TaskExecutorDisconnect(_message.Message):
    __slots__ = ("job_master_id", "resource_id", "reason")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    resource_id: str
    reason: str
    def __init__(self, job_master_id: _Optional[str] = ..., resource_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class AllocationFailure(_message.Message):
    __slots__ = ("job_master_id", "allocation_id", "cause")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    allocation_id: str
    cause: str
    def __init__(self, job_master_id: _Optional[str] = ..., allocation_id: _Optional[str] = ..., cause: _Optional[str] = ...) -> None: ...

class JobId(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class SubtaskDetails(_message.Message):
    __slots__ = ("index", "state", "attempt", "resource_id", "allocation_id", "metrics", "error", "state_timestamps", "splits_local", "splits_remote", "host", "slot_profile", "worker_spec")
    class StateTimestampsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STATE_TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    SPLITS_LOCAL_FIELD_NUMBER: _ClassVar[int]
    SPLITS_REMOTE_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    SLOT_PROFILE_FIELD_NUMBER: _ClassVar[int]
    WORKER_SPEC_FIELD_NUMBER: _ClassVar[int]
    index: int
    state: _common_pb2.ExecutionState
    attempt: int
    resource_id: str
    allocation_id: str
    metrics: _common_pb2.TaskMetrics
    error: str
    state_timestamps: _containers.ScalarMap[str, float]
    splits_local: int
    splits_remote: int
    host: str
    slot_profile: _common_pb2.ResourceSpec
    worker_spec: str
    def __init__(self, index: _Optional[int] = ..., state: _Optional[_Union[_common_pb2.ExecutionState, str]] = ..., attempt: _Optional[int] = ..., resource_id: _Optional[str] = ..., allocation_id: _Optional[str] = ..., metrics: _Optional[_Union[_common_pb2.TaskMetrics, _Mapping]] = ..., error: _Optional[str] = ..., state_timestamps: _Optional[_Mapping[str, float]] = ..., splits_local: _Optional[int] = ..., splits_remote: _Optional[int] = ..., host: _Optional[str] = ..., slot_profile: _Optional[_Union[_common_pb2.ResourceSpec, _Mapping]] = ..., worker_spec: _Optional[str] = ...) -> None: ...

class VertexInput(_message.Message):
    __slots__ = ("producer", "ship")
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    SHIP_FIELD_NUMBER: _ClassVar[int]
    producer: str
    ship: str
    def __init__(self, producer: _Optional[str] = ..., ship: _Optional[str] = ...) -> None: ...

class VertexDetails(_message.Message):
    __slots__ = ("id", "name", "parallelism", "subtasks", "inputs", "splits_total", "decision", "operators")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    SUBTASKS_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    SPLITS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    parallelism: int
    subtasks: _containers.RepeatedCompositeFieldContainer[SubtaskDetails]
    inputs: _containers.RepeatedCompositeFieldContainer[VertexInput]
    splits_total: int
    decision: str
    operators: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., parallelism: _Optional[int] = ..., subtasks: _Optional[_Iterable[_Union[SubtaskDetails, _Mapping]]] = ..., inputs: _Optional[_Iterable[_Union[VertexInput, _Mapping]]] = ..., splits_total: _Optional[int] = ..., decision: _Optional[str] = ..., operators: _Optional[_Iterable[str]] = ...) -> None: ...

class JobDetails(_message.Message):
    __slots__ = ("job_id", "name", "legacy_status", "status", "start_time", "end_time", "vertices", "failure", "failure_detail", "restarts", "exceptions", "application_attempt", "blocked_hosts", "speculations", "warnings", "checkpoints")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LEGACY_STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_DETAIL_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    EXCEPTIONS_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_HOSTS_FIELD_NUMBER: _ClassVar[int]
    SPECULATIONS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    name: str
    legacy_status: str
    status: _common_pb2.JobStatus
    start_time: float
    end_time: float
    vertices: _containers.RepeatedCompositeFieldContainer[VertexDetails]
    failure: str
    failure_detail: str
    restarts: int
    exceptions: _containers.RepeatedCompositeFieldContainer[ExceptionEntry]
    application_attempt: int
    blocked_hosts: _containers.RepeatedCompositeFieldContainer[_common_pb2.BlockedNode]
    speculations: _containers.RepeatedCompositeFieldContainer[SpeculativeAttempt]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    checkpoints: str
    def __init__(self, job_id: _Optional[str] = ..., name: _Optional[str] = ..., legacy_status: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.JobStatus, str]] = ..., start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., vertices: _Optional[_Iterable[_Union[VertexDetails, _Mapping]]] = ..., failure: _Optional[str] = ..., failure_detail: _Optional[str] = ..., restarts: _Optional[int] = ..., exceptions: _Optional[_Iterable[_Union[ExceptionEntry, _Mapping]]] = ..., application_attempt: _Optional[int] = ..., blocked_hosts: _Optional[_Iterable[_Union[_common_pb2.BlockedNode, _Mapping]]] = ..., speculations: _Optional[_Iterable[_Union[SpeculativeAttempt, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ..., checkpoints: _Optional[str] = ...) -> None: ...

class SpeculativeAttempt(_message.Message):
    __slots__ = ("task", "attempt", "original_attempt", "original_host", "started", "reason", "host", "outcome", "note")
    TASK_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_HOST_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    task: str
    attempt: int
    original_attempt: int
    original_host: str
    started: float
    reason: str
    host: str
    outcome: str
    note: str
    def __init__(self, task: _Optional[str] = ..., attempt: _Optional[int] = ..., original_attempt: _Optional[int] = ..., original_host: _Optional[str] = ..., started: _Optional[float] = ..., reason: _Optional[str] = ..., host: _Optional[str] = ..., outcome: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class ExceptionEntry(_message.Message):
    __slots__ = ("timestamp", "task", "attempt", "resource_id", "host", "cause")
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    timestamp: float
    task: str
    attempt: int
    resource_id: str
    host: str
    cause: str
    def __init__(self, timestamp: _Optional[float] = ..., task: _Optional[str] = ..., attempt: _Optional[int] = ..., resource_id: _Optional[str] = ..., host: _Optional[str] = ..., cause: _Optional[str] = ...) -> None: ...

class CheckpointAck(_message.Message):
    __slots__ = ("job_master_id", "attempt_id", "checkpoint_id", "snapshot")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    attempt_id: str
    checkpoint_id: int
    snapshot: bytes
    def __init__(self, job_master_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., checkpoint_id: _Optional[int] = ..., snapshot: _Optional[bytes] = ...) -> None: ...

class CheckpointDecline(_message.Message):
    __slots__ = ("job_master_id", "attempt_id", "checkpoint_id", "reason")
    JOB_MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    job_master_id: str
    attempt_id: str
    checkpoint_id: int
    reason: str
    def __init__(self, job_master_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., checkpoint_id: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...
