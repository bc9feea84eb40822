import common_pb2 as _common_pb2
import jobgraph_pb2 as _jobgraph_pb2
import jobmaster_pb2 as _jobmaster_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubmitJobResponse(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class JobList(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_jobmaster_pb2.JobDetails]
    def __init__(self, jobs: _Optional[_Iterable[_Union[_jobmaster_pb2.JobDetails, _Mapping]]] = ...) -> None: ...

class SessionOverview(_message.Message):
    __slots__ = ("history_dir", "container_sizes", "executors", "free_slots", "total_slots", "running_jobs", "finished_jobs")
    HISTORY_DIR_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_SIZES_FIELD_NUMBER: _ClassVar[int]
    EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    FREE_SLOTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SLOTS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_JOBS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_JOBS_FIELD_NUMBER: _ClassVar[int]
    history_dir: str
    container_sizes: str
    executors: int
    free_slots: int
    total_slots: int
    running_jobs: int
    finished_jobs: int
    def __init__(self, history_dir: _Optional[str] = ..., container_sizes: _Optional[str] = ..., executors: _Optional[int] = ..., free_slots: _Optional[int] = ..., total_slots: _Optional[int] = ..., running_jobs: _Optional[int] = ..., finished_jobs: _Optional[int] = ...) -> None: ...

class CollectedResult(_message.Message):
    __slots__ = ("parts",)
    PARTS_FIELD_NUMBER: _ClassVar[int]
    parts: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, parts: _Optional[_Iterable[bytes]] = ...) -> None: ...

class SavepointRequest(_message.Message):
    __slots__ = ("job_id", "directory", "terminate")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    TERMINATE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    directory: str
    terminate: bool
    def __init__(self, job_id: _Optional[str] = ..., directory: _Optional[str] = ..., terminate: _Optional[bool] = ...) -> None: ...

class SavepointResponse(_message.Message):
    __slots__ = ("location",)
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    location: str
    def __init__(self, location: _Optional[str] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...
