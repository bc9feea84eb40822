"""The ExecutionGraph: the JobGraph expanded into subtasks, attempts and partitions."""
from yarnflow.core.status import (
    ExecutionState, IllegalStateTransition, JobStatus)
from yarnflow.appmaster.jobmaster.executiongraph.execution import Execution
from yarnflow.appmaster.jobmaster.executiongraph.graph import (
    ConsumedPartitionGroup, ExecutionGraph, ExecutionJobVertex, ExecutionVertex,
    IntermediateResult, IntermediateResultPartition)

__all__ = ["ExecutionState", "JobStatus", "IllegalStateTransition", "Execution",
           "ExecutionGraph", "ExecutionJobVertex", "ExecutionVertex", "IntermediateResult",
           "IntermediateResultPartition", "ConsumedPartitionGroup"]
