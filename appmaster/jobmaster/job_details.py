"""Job details (per vertex and subtask state, metrics, failure) as the wire message."""
from __future__ import annotations

from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, JobStatus
from yarnflow.rpc.codec import fill_metrics
from yarnflow.rpc.generated import jobmaster_pb2


def job_details(graph: ExecutionGraph) -> jobmaster_pb2.JobDetails:
    details = jobmaster_pb2.JobDetails(
        job_id=graph.job_id, name=graph.name, status=graph.status.value,
        start_time=graph.status_timestamps.get(JobStatus.RUNNING,
                                               graph.status_timestamps[JobStatus.CREATED]),
        failure=graph.failure, failure_detail=graph.failure_detail)
    for status in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED):
        if status in graph.status_timestamps:
            details.end_time = graph.status_timestamps[status]
    for ejv in graph.vertices_topologically():
        vertex = details.vertices.add(id=ejv.id, name=ejv.name, parallelism=ejv.parallelism)
        for ev in ejv.task_vertices:
            execution = ev.current
            sub = vertex.subtasks.add(index=ev.subtask_index, state=int(execution.state),
                                      attempt=execution.attempt_number,
                                      resource_id=execution.resource_id or "",
                                      host=execution.slot.location.host
                                      if execution.slot is not None else "",
                                      allocation_id=execution.allocation_id or "",
                                      error=execution.failure,
                                      splits_local=execution.splits_local,
                                      splits_remote=execution.splits_remote)
            for state, at in execution.state_timestamps.items():
                sub.state_timestamps[state.name] = at
            if execution.metrics is not None:
                fill_metrics(execution.metrics, sub.metrics)
    return details
