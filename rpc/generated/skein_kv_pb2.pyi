from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetRangeRequest(_message.Message):
    __slots__ = ("start", "end", "result_type")
    class ResultType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ITEMS: _ClassVar[GetRangeRequest.ResultType]
        KEYS: _ClassVar[GetRangeRequest.ResultType]
        NONE: _ClassVar[GetRangeRequest.ResultType]
    ITEMS: GetRangeRequest.ResultType
    KEYS: GetRangeRequest.ResultType
    NONE: GetRangeRequest.ResultType
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    RESULT_TYPE_FIELD_NUMBER: _ClassVar[int]
    start: str
    end: str
    result_type: GetRangeRequest.ResultType
    def __init__(self, start: _Optional[str] = ..., end: _Optional[str] = ..., result_type: _Optional[_Union[GetRangeRequest.ResultType, str]] = ...) -> None: ...

class KeyValue(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class GetRangeResponse(_message.Message):
    __slots__ = ("count", "result_type", "result")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    RESULT_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    count: int
    result_type: GetRangeRequest.ResultType
    result: _containers.RepeatedCompositeFieldContainer[KeyValue]
    def __init__(self, count: _Optional[int] = ..., result_type: _Optional[_Union[GetRangeRequest.ResultType, str]] = ..., result: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ...) -> None: ...
