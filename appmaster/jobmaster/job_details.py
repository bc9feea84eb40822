"""A job's details (per vertex and subtask state, metrics, failure) from its
ExecutionGraph."""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from yarnflow.core.ids import AllocationID, ResourceID
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, ExecutionJobVertex, JobStatus
from yarnflow.core.details import (ExceptionEntry, JobDetails, SpeculativeAttempt,
                                   SubtaskDetails, VertexDetails, VertexInput)
from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.messages import TaskMetrics


def job_details(graph: ExecutionGraph, restarts: int = 0,
                exceptions: Sequence[ExceptionEntry] = (), application_attempt: int = 1,
                splits_total: Mapping[str, int] | None = None,
                blocked: Sequence[BlockedNode] = (),
                speculations: Sequence[SpeculativeAttempt] = ()) -> JobDetails:
    """``splits_total``: vertex id -> its input splits, for each source; ``blocked``:
    the hosts the job's blocklist holds; ``speculations``: its speculative attempts."""
    end_time = 0.0
    for status in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED):
        end_time = graph.status_timestamps.get(status, end_time)
    details = JobDetails(
        graph.job_id, graph.name, graph.status,
        graph.status_timestamps.get(JobStatus.RUNNING, graph.status_timestamps[JobStatus.CREATED]),
        end_time, failure=graph.failure, failure_detail=graph.failure_detail,
        restarts=restarts, exceptions=list(exceptions), application_attempt=application_attempt,
        blocked_hosts=list(blocked), speculations=[dataclasses.replace(a) for a in speculations])
    for ejv in graph.vertices_topologically():
        vertex = VertexDetails(ejv.id, ejv.name, ejv.parallelism, inputs=[
            VertexInput(result.producer.name, result.ship.name.lower()) for result in ejv.inputs],
            splits_total=(splits_total or {}).get(ejv.id, 0), decision=decision_of(ejv),
            operators=list(ejv.job_vertex.operator_names))
        details.vertices.append(vertex)
        for ev in ejv.task_vertices:
            execution = ev.current
            slot = execution.slot                        # a LogicalSlot, or None
            physical = slot.physical if slot is not None else None
            vertex.subtasks.append(SubtaskDetails(
                ev.subtask_index, execution.state, execution.attempt_number,
                execution.resource_id or ResourceID(""), execution.allocation_id or AllocationID(""),
                dataclasses.replace(execution.metrics) if execution.metrics is not None
                else TaskMetrics(),
                execution.failure,
                {state.name: at for state, at in execution.state_timestamps.items()},
                execution.splits_local, execution.splits_remote,
                physical.location.host if physical is not None else "",
                slot.group.profile if slot is not None else None,   # as requested: per shared slot
                physical.worker_spec if physical is not None else ""))
    return details


def decision_of(ejv: ExecutionJobVertex) -> str:
    """What adaptive execution decided for the vertex, and from what; "" when nothing
    was left to the run time."""
    if not ejv.adaptive:
        return ""
    decision = ejv.decision
    if decision is None:
        return (f"parallelism decided at run time, once its inputs are written "
                f"(configured {ejv.configured_parallelism})")
    return (f"parallelism {decision.parallelism} decided at run time (configured "
            f"{decision.configured}): {decision.reason}")
