"""What a failover must run again besides the failed subtasks: the producers of results
that were lost with their executor and are still to be read."""
from __future__ import annotations

from typing import Collection

from yarnflow.appmaster.jobmaster.executiongraph import (ExecutionGraph, ExecutionState,
                                                         ExecutionVertex,
                                                         IntermediateResultPartition)
from yarnflow.core.ids import ResourceID
from yarnflow.core.jobgraph import PartitionType

_STOPPED = frozenset({ExecutionState.FAILED, ExecutionState.CANCELING, ExecutionState.CANCELED})


def lost_results_still_needed(graph: ExecutionGraph, resource_id: ResourceID) -> list[ExecutionVertex]:
    """Producers of finished BLOCKING results stored on ``resource_id`` that a subtask
    which has not finished will read: they must run again."""
    producers: list[ExecutionVertex] = []
    for ejv in graph.vertices_topologically():
        for result in ejv.produced:
            if result.partition_type is not PartitionType.BLOCKING or result.store or \
                    all(c.current.state is ExecutionState.FINISHED
                        for c in result.consumer.task_vertices):
                continue
            producers.extend(p.producer for p in result.partitions
                             if p.finished and p.producer.current.resource_id == resource_id)
    return producers


def partition_available(partition: IntermediateResultPartition, lost: Collection[str]) -> bool:
    """Whether a restarted consumer can read ``partition`` without its producer running
    again: written or being written, by an attempt that did not fail, on an executor
    that is not ``lost`` (a producer not yet deployed runs when it is due)."""
    producer = partition.producer.current
    if partition.result.store and producer.state is ExecutionState.FINISHED:
        return True           # on the cluster file system, not on its executor
    return producer.state not in _STOPPED and producer.resource_id not in lost
