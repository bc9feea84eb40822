"""The REST API's answers, as JSON-ready dicts shaped after Flink's where Flink has the
endpoint (``/overview``, ``/jobs/overview``, ``/jobs/:id``, ``/jobs/:id/plan``,
``/jobs/:id/vertices/:vid``, ``/jobs/:id/exceptions``, ``/taskmanagers``,
``/jobmanager/config``). Built from the same ``JobDetails`` the CLI prints, so the page
and ``yarnflow status`` cannot disagree. Pure functions: no I/O, no clock of their own.
"""
from __future__ import annotations

from typing import Any, Sequence

from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.ids import ResourceID
from yarnflow.core.details import ExecutorDetails, JobDetails, SubtaskDetails, VertexDetails
from yarnflow.core.messages import ClusterOverview, TokenStatus, input_skew
from yarnflow.core.plan import spec_json
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import ExecutionState, JobStatus
from yarnflow.appmaster.webmonitor.source import ApplicationInfo

VERSION = "0.1.0"


def _millis(seconds: float) -> int:
    return int(round(seconds * 1000)) if seconds else -1


def _duration_ms(start: float, end: float, now: float) -> int:
    if not start:
        return -1
    return int(round(((end or now) - start) * 1000))


def _spec(spec: ResourceSpec | None) -> dict[str, Any] | None:
    return spec_json(spec) if spec is not None else None


def _state_counts(subtasks: list[SubtaskDetails]) -> dict[str, int]:
    counts = {state.name: 0 for state in ExecutionState}
    for subtask in subtasks:
        counts[subtask.state.name] += 1
    return counts


def vertex_status(subtasks: list[SubtaskDetails]) -> str:
    """One state for a vertex, aggregated as Flink's ExecutionJobVertex does: a failure
    or cancellation shows first, a vertex is FINISHED only when all its subtasks are,
    and RUNNING while any runs or some finished and others have yet to."""
    states = {s.state for s in subtasks}
    if ExecutionState.FAILED in states:
        return ExecutionState.FAILED.name
    if states & {ExecutionState.CANCELING, ExecutionState.CANCELED}:
        return ExecutionState.CANCELED.name
    if states and states <= {ExecutionState.FINISHED}:
        return ExecutionState.FINISHED.name
    if states & {ExecutionState.RUNNING, ExecutionState.FINISHED}:
        return ExecutionState.RUNNING.name
    for state in (ExecutionState.INITIALIZING, ExecutionState.DEPLOYING, ExecutionState.SCHEDULED):
        if state in states:
            return state.name
    return ExecutionState.CREATED.name


def _vertex_metrics(subtasks: list[SubtaskDetails]) -> dict[str, Any]:
    metrics = [s.metrics for s in subtasks]
    skew = input_skew(metrics)
    return {"read-records": sum(m.records_in for m in metrics),
            "write-records": sum(m.records_out for m in metrics),
            "read-bytes": sum(m.bytes_in for m in metrics),
            "write-bytes": sum(m.bytes_out for m in metrics),
            "input-skew": None if skew is None else round(skew, 4),
            # past their memory, its operators' spill to local disk (issue 57)
            "spilled-bytes": sum(m.spilled_bytes for m in metrics),
            "spill-files": sum(m.spill_files for m in metrics),
            # a streaming job's: the vertex's event time is its slowest subtask's (Flink's
            # currentInputWatermark), and its sources' records not read yet
            "watermark": _lowest([m.watermark for m in metrics]),
            "lag": _total([m.lag for m in metrics])}


def _lowest(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return min(known) if known and len(known) == len(values) else None


def _total(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _job_state_counts(jobs: list[JobDetails]) -> dict[str, int]:
    counts = {status: 0 for status in JobStatus}
    for job in jobs:
        counts[job.status] += 1
    return {"jobs-running": sum(n for s, n in counts.items() if not s.is_globally_terminal),
            "jobs-finished": counts[JobStatus.FINISHED],
            "jobs-cancelled": counts[JobStatus.CANCELED],
            "jobs-failed": counts[JobStatus.FAILED]}


def containers_by_size(executors: list[ExecutorDetails]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for executor in executors:
        label = executor.container.label() if executor.container is not None else "unknown"
        sizes[label] = sizes.get(label, 0) + 1
    return dict(sorted(sizes.items()))


def overview(app: ApplicationInfo, jobs: list[JobDetails], cluster: ClusterOverview,
             executors: list[ExecutorDetails], blocked: Sequence[BlockedNode] = ()) -> dict[str, Any]:
    return {"taskmanagers": len(cluster.workers),
            "taskmanagers-starting": cluster.pending_workers,
            "slots-total": sum(w.num_slots for w in cluster.workers),
            "slots-available": sum(w.free_slots for w in cluster.workers),
            "pending-slot-requests": cluster.pending_slot_requests,
            "containers-by-size": containers_by_size(executors),
            **_job_state_counts(jobs),
            "yarnflow-version": VERSION, "mode": app.mode,
            "application-id": app.application_id, "application-attempt": app.attempt,
            "start-time": _millis(app.start_time), "history-dir": app.history_dir,
            "blocked-hosts": _blocked(blocked),
            "delegation-tokens": _tokens(cluster.delegation_tokens)}


def _tokens(status: TokenStatus | None) -> dict[str, Any]:
    """When the application's HDFS tokens end and how their renewals went; never a
    token itself."""
    if status is None or not status.expires_at:
        return {}
    return {"state": status.state, "expires": _millis(status.expires_at),
            "renewals": status.renewals, "last-renewal-ms": round(status.last_renewal_ms, 1),
            "warning": status.warning}


def job_overview(job: JobDetails, now: float) -> dict[str, Any]:
    subtasks = [s for v in job.vertices for s in v.subtasks]
    return {"jid": job.job_id, "name": job.name, "state": job.status.value,
            "start-time": _millis(job.start_time), "end-time": _millis(job.end_time),
            "duration": _duration_ms(job.start_time, job.end_time, now),
            "restarts": job.restarts, "application-attempt": job.application_attempt,
            "tasks": {"total": len(subtasks), **_state_counts(subtasks)}}


def jobs_overview(jobs: list[JobDetails], now: float) -> dict[str, Any]:
    return {"jobs": [job_overview(job, now) for job in jobs]}


def _vertex(vertex: VertexDetails, plan: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": vertex.id, "name": vertex.name, "parallelism": vertex.parallelism,
            "status": vertex_status(vertex.subtasks),
            "tasks": _state_counts(vertex.subtasks),
            "metrics": {**_vertex_metrics(vertex.subtasks),
                        "progress": round(vertex.progress(), 4),
                        "splits-total": vertex.splits_total},
            "subtask-profile": _decided_profile(vertex) or (plan["subtask_profile"] if plan else None),
            "slot-sharing-group": plan["slot_sharing_group"] if plan else "",
            "decision": vertex.decision,      # adaptive execution's, with its measured bytes
            "operators": _operators(vertex),
            # a sort's ranges in order, with the bytes each got (empty for other vertices)
            "ranges": [{"subtask": s.index, "first": first, "last": last,
                        "read-records": s.metrics.records_in, "read-bytes": s.metrics.bytes_in}
                       for s, first, last in vertex.key_ranges()],
            "inputs": [{"num": i, "producer": inp.producer, "ship_strategy": inp.ship.upper()}
                       for i, inp in enumerate(vertex.inputs)]}


def _operators(vertex: VertexDetails) -> list[dict[str, Any]]:
    """Its operators, head first, each with its records, bytes and progress (a vertex of
    one operator lists it with the vertex's own figures)."""
    keys = ("read-records", "write-records", "read-bytes", "write-bytes")
    return [{"name": op.name,
             "metrics": {**dict(zip(keys, (op.records_in, op.records_out, op.bytes_in,
                                           op.bytes_out))),
                         "progress": round(vertex.operator_progress(op.name), 4)}}
            for op in vertex.operator_totals()]


def _decided_profile(vertex: VertexDetails) -> dict[str, Any] | None:
    """An adaptive vertex's slots as they were sized at run time (the plan knew only the
    default); None for the rest, or before its subtasks have slots."""
    profiles = {s.slot_profile for s in vertex.subtasks if s.slot_profile is not None}
    return _spec(profiles.pop()) if vertex.decision and len(profiles) == 1 else None


def job(job: JobDetails, plan: list[dict[str, Any]] | None, now: float) -> dict[str, Any]:
    planned = {v["id"]: v for v in plan or []}
    summary = job_overview(job, now)
    return {**summary, "now": _millis(now), "failure": job.failure,
            "vertices": [_vertex(v, planned.get(v.id)) for v in job.vertices],
            "status-counts": summary["tasks"],
            "blocked-hosts": _blocked(job.blocked_hosts),
            "speculations": [{"subtask": a.task, "attempt": a.attempt, "host": a.host,
                              "slow-attempt": a.original_attempt, "slow-host": a.original_host,
                              "started": _millis(a.started), "reason": a.reason,
                              "outcome": a.outcome.value, "note": a.note}
                             for a in job.speculations]}


def _blocked(nodes: Sequence[BlockedNode]) -> list[dict[str, Any]]:
    return [{"host": n.host, "cause": n.cause, "since": _millis(n.since),
             "until": _millis(n.until)} for n in nodes]


def plan(job: JobDetails, vertices: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Flink's ``/jobs/:id/plan``: nodes with their inputs (ship strategy, exchange), and
    what the planner estimated each would emit."""
    if vertices is None:       # an ended job this ApplicationMaster no longer holds
        vertices = [{"id": v.id, "name": v.name, "parallelism": v.parallelism,
                     "slot_sharing_group": "", "subtask_profile": None, "uses_spark": False,
                     "estimate": {"rows": None, "bytes": None, "from": ""},
                     "inputs": [{"index": i, "producer": inp.producer, "producer_id": "",
                                 "ship": inp.ship.upper(), "keys": [], "exchange": ""}
                                for i, inp in enumerate(v.inputs)]} for v in job.vertices]
    ids = {v["name"]: v["id"] for v in vertices}
    decided = {v.id: profile for v in job.vertices if (profile := _decided_profile(v))}
    nodes = [{"id": v["id"], "description": v["name"], "parallelism": v["parallelism"],
              "slot_sharing_group": v["slot_sharing_group"],
              "profile": decided.get(v["id"], v["subtask_profile"]),
              "uses_spark": v["uses_spark"], "estimate": v["estimate"],
              "adaptive": v.get("adaptive", False),
              "inputs": [{"num": inp["index"], "id": inp["producer_id"] or ids.get(inp["producer"], ""),
                          "producer": inp["producer"], "ship_strategy": inp["ship"],
                          "keys": inp["keys"], "exchange": inp["exchange"]}
                         for inp in v["inputs"]]} for v in vertices]
    return {"plan": {"jid": job.job_id, "name": job.name, "nodes": nodes}}


def _subtask(subtask: SubtaskDetails, placements: dict[ResourceID, ExecutorDetails],
             now: float) -> dict[str, Any]:
    executor = placements.get(subtask.resource_id)
    started = subtask.state_timestamps.get(ExecutionState.RUNNING.name) or \
        subtask.state_timestamps.get(ExecutionState.DEPLOYING.name, 0.0)
    ended = 0.0
    if subtask.state.is_terminal:
        ended = subtask.state_timestamps.get(subtask.state.name, 0.0)
    m = subtask.metrics
    return {"subtask": subtask.index, "status": subtask.state.name, "attempt": subtask.attempt,
            "taskmanager-id": subtask.resource_id, "host": subtask.host,
            "container-id": executor.container_id if executor else "",
            "node": executor.node if executor else "",
            "slot-profile": _spec(subtask.slot_profile), "worker-spec": subtask.worker_spec,
            "start-time": _millis(started), "duration": _duration_ms(started, ended, now),
            "metrics": {"read-records": m.records_in, "write-records": m.records_out,
                        "read-bytes": m.bytes_in, "write-bytes": m.bytes_out,
                        "records-in-per-input": list(m.records_in_per_input),
                        "inputs-done": m.inputs_done, "inputs-total": m.inputs_total,
                        "key-range": list(m.key_range),
                        "spilled-bytes": m.spilled_bytes, "spill-files": m.spill_files},
            "splits-local": subtask.splits_local, "splits-remote": subtask.splits_remote,
            "failure": subtask.error}


def vertex(job: JobDetails, vertex_id: str, executors: list[ExecutorDetails],
           now: float) -> dict[str, Any] | None:
    found = next((v for v in job.vertices if v.id == vertex_id), None)
    if found is None:
        return None
    placements = {e.resource_id: e for e in executors}
    return {"id": found.id, "name": found.name, "parallelism": found.parallelism,
            "now": _millis(now), "status": vertex_status(found.subtasks),
            "subtasks": [_subtask(s, placements, now) for s in found.subtasks]}


def exceptions(job: JobDetails) -> dict[str, Any]:
    """The root cause when the job failed, and every failure it recovered from."""
    return {"root-exception": job.failure or None,
            "timestamp": _millis(job.end_time) if job.failure else None,
            "exceptionHistory": {"entries": [
                {"timestamp": _millis(e.timestamp), "taskName": e.task, "attempt": e.attempt,
                 "taskManagerId": e.resource_id, "location": e.host, "exceptionName": e.cause}
                for e in reversed(job.exceptions)], "truncated": False}}


def taskmanagers(executors: list[ExecutorDetails], cluster: ClusterOverview) -> dict[str, Any]:
    return {"taskmanagers": [
        {"id": e.resource_id, "state": e.state, "container-id": e.container_id,
         "node": e.node, "host": e.host, "worker-spec": e.worker_spec,
         "container": _spec(e.container), "slot-profile": _spec(e.slot_profile),
         "slotsNumber": e.slots_total, "freeSlots": e.slots_total - e.slots_used,
         "slots-used": e.slots_used, "waiting": e.waiting} for e in executors],
        "pending-slot-requests": cluster.pending_slot_requests}


def configuration(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": key, "value": value} for key, value in values.items()]
