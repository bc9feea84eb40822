"""Where a job runs, seen from the client (Flink's PipelineExecutor and JobClient).

A ``Target`` takes a JobGraph and returns a ``JobHandle`` as soon as the job was
accepted; the handle is the same kind of thing whatever the target: the job's status
as a ``JobStatus``, its details, ``wait`` for its ``JobResult``, and ``cancel``.
"""
from __future__ import annotations

import abc

from yarnflow.core.ids import JobID
from yarnflow.conf import Configuration, options
from yarnflow.core.clock import poll_until
from yarnflow.core.details import JobDetails, JobResult
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import JobStatus
from yarnflow.core.worker_spec import WorkerSpec, plan_worker_specs

FIRST_POLL_S = 0.01     # JobHandle.wait's first interval, doubled up to its ``poll``

class JobHandle(abc.ABC):
    job_id: JobID
    application_id: str = ""     # the YARN application that runs the job; "" locally
    tracking_url: str = ""
    log_location: str = ""       # where the executors' logs stay after the job (local)
    web_url: str = ""            # the job's web UI while it runs; "" when not served
    collecting: bool = False     # the job ends in a collect sink: fetch its result

    @abc.abstractmethod
    def details(self) -> JobDetails | None:
        """The job's details now; None while nothing answers for it yet."""

    @abc.abstractmethod
    def result(self) -> JobResult | None:
        """How the job ended; None while it runs."""

    @abc.abstractmethod
    def cancel(self) -> None:
        """Cancel the job: its tasks stop, its output is left as it was, and on YARN a
        per-job application ends KILLED (a session keeps running)."""

    def savepoint(self, directory: str = "", timeout: float | None = None) -> str:
        """A savepoint of the running streaming job into a new directory under
        ``directory`` (default: ``state.savepoints.dir``); its location, once it
        completed. The job runs on."""
        raise NotImplementedError(f"{type(self).__name__} takes no savepoints")

    def stop(self, directory: str = "", timeout: float | None = None) -> str:
        """End the streaming job gracefully (Flink's ``stop``): a final savepoint, whose
        output is committed, then the job FINISHes; its location."""
        raise NotImplementedError(f"{type(self).__name__} cannot stop a job")

    def status(self) -> JobStatus:
        """The job's status now (a ``yf.JobStatus``: CREATED, RUNNING, FINISHED,
        FAILED, CANCELED, ...)."""
        ended = self.result()
        if ended is not None:
            return ended.status
        details = self.details()
        return details.status if details is not None else JobStatus.CREATED

    def wait(self, timeout: float | None = None, poll: float = 0.5) -> JobResult:
        """Block until the job ended; ``TimeoutError`` naming the job after ``timeout``.
        Asked after 10 ms, then twice as long each time up to ``poll`` seconds: a
        session's short job is seen ending within milliseconds, not half a second."""
        ended = poll_until(self.result, timeout, min(FIRST_POLL_S, poll), max_interval=poll)
        if ended is None:
            raise TimeoutError(f"job {self.job_id} did not end within {timeout:g} s")
        return ended

    def collected(self) -> tuple[bytes, ...]:
        """A FINISHED collecting job's rows, an Arrow IPC stream per subtask."""
        ended = self.result()
        if ended is None:
            raise RuntimeError(f"job {self.job_id} has not ended: its result is not there yet")
        return ended.collected

    def close(self) -> None:
        """Let go of connections (the job runs on)."""


class Target(abc.ABC):
    name: str
    #: whether ``execute()`` follows the job to its end (local always does)
    attached: bool = True

    def __init__(self, config: Configuration) -> None:
        self.config = config

    @abc.abstractmethod
    def submit(self, graph: JobGraph) -> JobHandle: ...

    def submitted(self, handle: JobHandle) -> list[str]:
        """What to tell the user once the job was accepted."""
        return []

    def application_ended(self, application_id: str) -> bool:
        """Whether YARN says the application ended: a job it ran holds no output any
        more, whatever its lease says. False where this target has no YARN to ask."""
        return False


def planned_worker_specs(graph: JobGraph, config: Configuration) -> dict[ResourceSpec, WorkerSpec]:
    """The executors a job's slots need, on every target: as many slots of each
    profile per executor as the job uses at once, never more."""
    default_slot = options.default_slot_profile(config)
    specs = plan_worker_specs(graph, default_slot, config.get(options.NUM_TASK_SLOTS),
                              config.get(options.WORKER_OVERHEAD_MEMORY),
                              options.largest_worker(config))
    overhead = config.get(options.WORKER_OVERHEAD_MEMORY)
    for group in graph.slot_sharing_groups():
        # what a later stage's shared slots ask for, when less than the whole (issue 81)
        for profile in graph.stage_slot_profiles(group, default_slot):
            specs.setdefault(profile, WorkerSpec(profile, 1, overhead))
    memory = options.slot_memory(config)
    if memory.enabled and any(v.adaptive for v in graph.vertices.values()):
        # the sizes adaptive execution may give a stage's slots: one slot per container,
        # so each is as large as its subtask needs (declared now: a per-job
        # application's containers are named when it is submitted)
        for profile in memory.profiles(default_slot):
            specs.setdefault(profile, WorkerSpec(profile, 1, config.get(options.WORKER_OVERHEAD_MEMORY)))
    return specs
