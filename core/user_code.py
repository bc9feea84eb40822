"""Code a user wrote, in the model: an operator or a sink's committer, with the
cloudpickle bytes it travels as (Flink's ``SerializedValue``).

One JobGraph type serves both sides of a submission. On the client a vertex's operator
is the object the pipeline built; in the ApplicationMaster it is the bytes the client
sent, which the master must not run (seed 002: user code runs in TaskExecutors). Both
are a ``UserCode``: built from the object (``UserCode.of``) it gives that object
(``value``); built from bytes (``UserCode.received``) it refuses to, until someone
``load()``s it, which runs the user's code. Only a TaskExecutor and the
ApplicationMaster's one named place (``yarnflow.appmaster.jobmaster.user_code``) do.
"""
from __future__ import annotations

from typing import Generic, TypeVar, cast, final

import cloudpickle

T = TypeVar("T")


class NotLoaded(RuntimeError):
    """The object of user code that arrived as bytes, asked for before it was loaded."""


@final
class UserCode(Generic[T]):
    __slots__ = ("_data", "_loaded", "_value")

    def __init__(self, value: T | None, data: bytes | None, loaded: bool) -> None:
        """Use ``of``, ``pickled`` or ``received``."""
        self._value = value
        self._data = data
        self._loaded = loaded

    @classmethod
    def of(cls, value: T) -> UserCode[T]:
        """The user's object, where the pipeline built it."""
        return cls(value, None, loaded=True)

    @classmethod
    def pickled(cls, value: T) -> UserCode[T]:
        """The object and its bytes, pickled once now: for one that no longer changes
        and is sent many times (a source's readers, once per subtask)."""
        return cls(value, cloudpickle.dumps(value), loaded=True)

    @classmethod
    def received(cls, data: bytes) -> UserCode[T]:
        """Bytes as they arrived; nothing of them runs until ``load``."""
        return cls(None, bytes(data), loaded=False)

    @property
    def loaded(self) -> bool:
        return self._loaded

    @property
    def value(self) -> T:
        """The object; NotLoaded where it arrived as bytes and nobody loaded it."""
        if not self._loaded:
            raise NotLoaded("user code that arrived as bytes runs only where it is loaded "
                            "(a TaskExecutor, or yarnflow.appmaster.jobmaster.user_code)")
        return cast(T, self._value)

    def load(self) -> T:
        """The object, unpickled once: this runs the user's code (their classes'
        ``__setstate__``, their module-level imports)."""
        if not self._loaded:
            self._value = cloudpickle.loads(self._data)
            self._loaded = True
        return cast(T, self._value)

    def serialized(self) -> bytes:
        """The bytes it travels as. An object built here is pickled now, as it is at
        this moment: the client's planner may still change an operator until it submits."""
        if self._data is not None:
            return self._data
        return cast(bytes, cloudpickle.dumps(self._value))

    def __repr__(self) -> str:
        if self._data is None:
            return f"UserCode.of({self._value!r})"
        return f"UserCode.received(<{len(self._data)} bytes>)"
