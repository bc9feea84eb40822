"""yarnflow: Flink's FLIP-6 runtime, in Python, for data pipelines on Hadoop YARN.

This package is what a pipeline author imports::

    import yarnflow as yf
    p = yf.Pipeline("example", parallelism=4)

The names below are loaded on first use (PEP 562): every TaskExecutor and
ApplicationMaster process imports ``yarnflow`` first, and the pipeline API it does
not need (the pipeline API, rich) would cost each of them start-up time
on a busy node.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from yarnflow.rpc.core_logs import quiet_grpc_core

quiet_grpc_core()       # before anything imports grpc; see rpc/core_logs.py

_EXPORTS = {
    "ResourceSpec": "yarnflow.core.resources",
    "InvalidPipelineError": "yarnflow.core.jobgraph",
    "JobGraph": "yarnflow.core.jobgraph",
    "PartitionType": "yarnflow.core.jobgraph",
    "ScheduleMode": "yarnflow.core.jobgraph",
    "ShipStrategy": "yarnflow.core.jobgraph",
    "DataSet": "yarnflow.pipeline",
    "Pipeline": "yarnflow.pipeline",
    "JobFailedError": "yarnflow.context",
    "JobStatus": "yarnflow.core.status",
    "JobHandle": "yarnflow.targets.base",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from yarnflow.context import JobFailedError
    from yarnflow.core.status import JobStatus
    from yarnflow.targets.base import JobHandle
    from yarnflow.core.jobgraph import (InvalidPipelineError, JobGraph, PartitionType,
                                        ScheduleMode, ShipStrategy)
    from yarnflow.pipeline import DataSet, Pipeline
    from yarnflow.core.resources import ResourceSpec


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'yarnflow' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
