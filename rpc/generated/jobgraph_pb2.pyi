import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DistributionPattern(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POINTWISE: _ClassVar[DistributionPattern]
    ALL_TO_ALL: _ClassVar[DistributionPattern]

class ShipStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORWARD: _ClassVar[ShipStrategy]
    HASH: _ClassVar[ShipStrategy]
    BROADCAST: _ClassVar[ShipStrategy]
    REBALANCE: _ClassVar[ShipStrategy]

class PartitionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PIPELINED: _ClassVar[PartitionType]
    BLOCKING: _ClassVar[PartitionType]

class ScheduleMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EAGER: _ClassVar[ScheduleMode]
    LAZY_FROM_SOURCES: _ClassVar[ScheduleMode]
POINTWISE: DistributionPattern
ALL_TO_ALL: DistributionPattern
FORWARD: ShipStrategy
HASH: ShipStrategy
BROADCAST: ShipStrategy
REBALANCE: ShipStrategy
PIPELINED: PartitionType
BLOCKING: PartitionType
EAGER: ScheduleMode
LAZY_FROM_SOURCES: ScheduleMode

class JobVertex(_message.Message):
    __slots__ = ("id", "name", "parallelism", "resources", "has_resources", "slot_sharing_group", "co_location_group", "operator", "num_inputs", "uses_spark", "committer", "estimate_rows", "estimate_bytes", "estimate_origin", "adaptive", "has_join", "join_buildable", "join_splittable", "join_broadcast_threshold", "operator_names", "collect")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    HAS_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    SLOT_SHARING_GROUP_FIELD_NUMBER: _ClassVar[int]
    CO_LOCATION_GROUP_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    NUM_INPUTS_FIELD_NUMBER: _ClassVar[int]
    USES_SPARK_FIELD_NUMBER: _ClassVar[int]
    COMMITTER_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_ROWS_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_BYTES_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    ADAPTIVE_FIELD_NUMBER: _ClassVar[int]
    HAS_JOIN_FIELD_NUMBER: _ClassVar[int]
    JOIN_BUILDABLE_FIELD_NUMBER: _ClassVar[int]
    JOIN_SPLITTABLE_FIELD_NUMBER: _ClassVar[int]
    JOIN_BROADCAST_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_NAMES_FIELD_NUMBER: _ClassVar[int]
    COLLECT_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    parallelism: int
    resources: _common_pb2.ResourceSpec
    has_resources: bool
    slot_sharing_group: str
    co_location_group: str
    operator: bytes
    num_inputs: int
    uses_spark: bool
    committer: bytes
    estimate_rows: int
    estimate_bytes: int
    estimate_origin: str
    adaptive: bool
    has_join: bool
    join_buildable: _containers.RepeatedScalarFieldContainer[int]
    join_splittable: _containers.RepeatedScalarFieldContainer[int]
    join_broadcast_threshold: int
    operator_names: _containers.RepeatedScalarFieldContainer[str]
    collect: bool
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., parallelism: _Optional[int] = ..., resources: _Optional[_Union[_common_pb2.ResourceSpec, _Mapping]] = ..., has_resources: _Optional[bool] = ..., slot_sharing_group: _Optional[str] = ..., co_location_group: _Optional[str] = ..., operator: _Optional[bytes] = ..., num_inputs: _Optional[int] = ..., uses_spark: _Optional[bool] = ..., committer: _Optional[bytes] = ..., estimate_rows: _Optional[int] = ..., estimate_bytes: _Optional[int] = ..., estimate_origin: _Optional[str] = ..., adaptive: _Optional[bool] = ..., has_join: _Optional[bool] = ..., join_buildable: _Optional[_Iterable[int]] = ..., join_splittable: _Optional[_Iterable[int]] = ..., join_broadcast_threshold: _Optional[int] = ..., operator_names: _Optional[_Iterable[str]] = ..., collect: _Optional[bool] = ...) -> None: ...

class JobEdge(_message.Message):
    __slots__ = ("source", "target", "target_input", "distribution", "ship", "keys", "partition_type", "source_operator")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    TARGET_INPUT_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    SHIP_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_TYPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_OPERATOR_FIELD_NUMBER: _ClassVar[int]
    source: str
    target: str
    target_input: int
    distribution: DistributionPattern
    ship: ShipStrategy
    keys: _containers.RepeatedScalarFieldContainer[str]
    partition_type: PartitionType
    source_operator: str
    def __init__(self, source: _Optional[str] = ..., target: _Optional[str] = ..., target_input: _Optional[int] = ..., distribution: _Optional[_Union[DistributionPattern, str]] = ..., ship: _Optional[_Union[ShipStrategy, str]] = ..., keys: _Optional[_Iterable[str]] = ..., partition_type: _Optional[_Union[PartitionType, str]] = ..., source_operator: _Optional[str] = ...) -> None: ...

class JobGraph(_message.Message):
    __slots__ = ("job_id", "name", "vertices", "edges", "schedule_mode", "spark_overhead_mb", "job_configuration")
    class JobConfigurationEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_MODE_FIELD_NUMBER: _ClassVar[int]
    SPARK_OVERHEAD_MB_FIELD_NUMBER: _ClassVar[int]
    JOB_CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    name: str
    vertices: _containers.RepeatedCompositeFieldContainer[JobVertex]
    edges: _containers.RepeatedCompositeFieldContainer[JobEdge]
    schedule_mode: ScheduleMode
    spark_overhead_mb: int
    job_configuration: _containers.ScalarMap[str, str]
    def __init__(self, job_id: _Optional[str] = ..., name: _Optional[str] = ..., vertices: _Optional[_Iterable[_Union[JobVertex, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[JobEdge, _Mapping]]] = ..., schedule_mode: _Optional[_Union[ScheduleMode, str]] = ..., spark_overhead_mb: _Optional[int] = ..., job_configuration: _Optional[_Mapping[str, str]] = ...) -> None: ...
