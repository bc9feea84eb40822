"""yarnflow: Flink's FLIP-6 runtime, in Python, for data pipelines on Hadoop YARN.

This package is what a pipeline author imports::

    import yarnflow as yf
    p = yf.Pipeline("example", parallelism=4)
"""
from yarnflow.resources import ResourceSpec
from yarnflow.jobgraph import (InvalidPipelineError, JobGraph, PartitionType, ScheduleMode,
                               ShipStrategy)
from yarnflow.pipeline import DataSet, Pipeline
from yarnflow.context import JobFailedError

__all__ = ["Pipeline", "DataSet", "ResourceSpec", "ScheduleMode", "ShipStrategy",
           "PartitionType", "JobGraph", "InvalidPipelineError", "JobFailedError"]
