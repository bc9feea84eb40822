"""Whether a worker's container can be placed, read against YARN's node reports: a
decision that returns its reason, so what the log, the web UI and a job's failure say
cannot drift from what the ResourceManager did.

Why: YARN places a container only on a host with its size free. When no live host has
it, asking again changes nothing. After an ApplicationMaster's host died, the new
attempt asked for a 4-vcore container for 300 s while every host had 3 free: one taken
by the ApplicationMaster, one by an idle executor kept for ``--min-executors``
(issue 81). So a worker YARN has not placed is checked against what each live host
has free, and in this order:

- it fits somewhere now: YARN will place it; nothing to do;
- it fits on a host once idle executors there are released: release them (as far as
  ``--min-executors`` allows; when that is what blocks, say so with the fix);
- it fits a live host's whole capacity, in use now: wait for it, without asking again
  (YARN keeps the request, and the job's regions that have slots run meanwhile);
- it fits no live host at all: it never will; the requests it was for fail, in one
  line naming the container and what each host has.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from yarnflow.appmaster.resourcemanager.drivers.base import NodeReport
from yarnflow.core.ids import ResourceID
from yarnflow.core.worker_spec import WorkerSpec


class Fit(enum.Enum):
    FITS = "fits"                        # a live host has its room free now
    RELEASE_IDLE = "release idle"        # ... once idle executors there are released
    KEPT_BY_MIN_EXECUTORS = "kept"       # ... but --min-executors keeps them
    WAIT = "wait"                        # a live host could hold it; its room is in use
    NEVER = "never"                      # no live host could ever hold it


@dataclass(frozen=True)
class IdleExecutor:
    resource_id: ResourceID
    host: str
    vcores: int
    memory_mb: int


@dataclass(frozen=True)
class FitDecision:
    fit: Fit
    reason: str
    release: tuple[ResourceID, ...] = ()


def describe_hosts(nodes: list[NodeReport]) -> str:
    return "; ".join(n.describe() for n in nodes) or "no live host"


def _serves(node: NodeReport, label: str) -> bool:
    """A labelled container goes only to its partition; an unlabelled one to the default."""
    return label in node.labels if label else not node.labels


def check_fit(spec: WorkerSpec, nodes: list[NodeReport], idle: list[IdleExecutor],
              releasable: int, min_executors: int = 0) -> FitDecision:
    """Where a container of ``spec`` stands on ``nodes`` (YARN's live hosts). ``idle``
    are this application's executors with nothing to do; at most ``releasable`` of
    them may go (the rest are kept for ``min_executors``)."""
    vcores, memory = spec.vcores, spec.container.memory_mb
    label = spec.slot_profile.node_label
    size = f"a {vcores}-vcore, {memory} MB container (worker spec {spec.name})"
    hosts = [n for n in nodes if _serves(n, label)]
    if any(n.free_vcores >= vcores and n.free_mb >= memory for n in hosts):
        return FitDecision(Fit.FITS, f"{size} fits a live host")
    best: tuple[int, str, tuple[ResourceID, ...]] | None = None
    for node in hosts:
        mine = sorted((e for e in idle if e.host == node.host),
                      key=lambda e: (-e.vcores, -e.memory_mb, e.resource_id))
        free_vcores, free_mb, chosen = node.free_vcores, node.free_mb, []
        for executor in mine:
            if free_vcores >= vcores and free_mb >= memory:
                break
            free_vcores += executor.vcores
            free_mb += executor.memory_mb
            chosen.append(executor.resource_id)
        if free_vcores >= vcores and free_mb >= memory and \
                (best is None or len(chosen) < best[0]):
            best = (len(chosen), node.host, tuple(chosen))
    if best is not None:
        count, host, chosen_ids = best
        if count <= releasable:
            return FitDecision(Fit.RELEASE_IDLE, f"{size} fits no live host's free room; "
                               f"releasing {count} idle executor(s) on {host} makes room "
                               f"({', '.join(chosen_ids)})", chosen_ids)
        return FitDecision(Fit.KEPT_BY_MIN_EXECUTORS, (
            f"{size} fits no live host's free room, and releasing {count} idle executor(s) "
            f"on {host} would make room, but --min-executors {min_executors} keeps them "
            f"warm ({describe_hosts(hosts)}); fix: start the session with fewer "
            "--min-executors, or give its operators smaller ResourceSpecs"))
    if any(n.total_vcores >= vcores and n.total_mb >= memory for n in hosts):
        return FitDecision(Fit.WAIT, f"{size} waits for room on a live host: "
                           f"{describe_hosts(hosts)}")
    if not nodes:
        return FitDecision(Fit.WAIT, f"{size} waits: YARN reports no live host")
    where = f"in node partition {label!r} " if label else ""
    return FitDecision(Fit.NEVER, (
        f"no live YARN host {where}can ever hold {size} for slots of "
        f"{spec.slot_profile}: {describe_hosts(hosts) if hosts else 'none has that label'}; "
        "fix: give the operators smaller ResourceSpecs (or fewer "
        "taskmanager.numberOfTaskSlots), or add hosts with more room"))
