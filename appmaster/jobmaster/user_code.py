"""The one place an ApplicationMaster runs code a user wrote, and why it must.

A pipeline's operators run in TaskExecutors: here they stay cloudpickle bytes
(``yarnflow.rpc.codec.as_received``). Two user objects run on the master, as in
Flink: a source lists its input splits (Flink's ``InputFormat.createInputSplits``),
so that splits are handed out on demand and to the hosts that store them; and a
sink's committer makes its output visible once, when the job finished, and
discards it otherwise (``InitializeOnMaster``/``FinalizeOnMaster``), which no single
subtask can do. Both are unpickled here, when the JobMaster starts, never when it
is made, so a bad one fails the job with its cause instead of rejecting it unread.
"""
from __future__ import annotations

from typing import Any

import cloudpickle


def load_source(data: bytes) -> Any:
    """A source operator, for its splits (``create_input_splits``, ``for_readers``)."""
    return cloudpickle.loads(data)


def load_committer(data: Any) -> Any:
    """A sink's committer (``setup``, ``commit``, ``abort``); one that is already an
    object (a graph built in this process) is used as it is."""
    return cloudpickle.loads(data) if isinstance(data, bytes) else data


def serialize(value: Any) -> bytes:
    """What a source hands its readers instead of itself: bytes again."""
    return cloudpickle.dumps(value)
