"""The pipeline API: what a pipeline author imports::

    import yarnflow.client as yf
    p = yf.Pipeline("example", parallelism=4)

The names below are loaded on first use (PEP 562), so ``yarnflow run --help`` and
the other commands that build no pipeline start without importing the pipeline API,
pyarrow or rich.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from yarnflow.conf.logs import quiet_grpc_core

quiet_grpc_core()       # before anything imports grpc; see conf/logs.py

_EXPORTS = {
    "ResourceSpec": "yarnflow.core.resources",
    "InvalidPipelineError": "yarnflow.core.jobgraph",
    "JobGraph": "yarnflow.core.jobgraph",
    "PartitionType": "yarnflow.core.jobgraph",
    "ScheduleMode": "yarnflow.core.jobgraph",
    "ShipStrategy": "yarnflow.core.jobgraph",
    "DataSet": "yarnflow.client.pipeline",
    "Pipeline": "yarnflow.client.pipeline",
    "JobFailedError": "yarnflow.client.context",
    "JobStatus": "yarnflow.core.status",
    "JobHandle": "yarnflow.client.targets.base",
    "NonRecoverableError": "yarnflow.core.failures",
    "tumbling": "yarnflow.client.streaming",
    "sliding": "yarnflow.client.streaming",
    "session": "yarnflow.client.streaming",
    "TimeBuckets": "yarnflow.core.streaming.file_sink",
    "KeyedProcessFunction": "yarnflow.core.streaming.keyed_process",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from yarnflow.client.context import JobFailedError
    from yarnflow.core.status import JobStatus
    from yarnflow.client.targets.base import JobHandle
    from yarnflow.core.jobgraph import (InvalidPipelineError, JobGraph, PartitionType,
                                        ScheduleMode, ShipStrategy)
    from yarnflow.client.pipeline import DataSet, Pipeline
    from yarnflow.core.failures import NonRecoverableError
    from yarnflow.core.resources import ResourceSpec
    from yarnflow.client.streaming import session, sliding, tumbling
    from yarnflow.core.streaming.file_sink import TimeBuckets
    from yarnflow.core.streaming.keyed_process import KeyedProcessFunction


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'yarnflow.client' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
