"""A batch job's progress on the cluster file system (``execution.batch.job-recovery.
enabled``; Flink's batch job recovery, FLIP-383, without keeping containers).

The job's directory, ``<execution.batch.partition-store.dir>/<job id>``, holds

- ``results/<result>/``: its BLOCKING results, written there by the producers
  (``taskexecutor/network/partition_store.py``), so they outlive executors and the
  ApplicationMaster;
- ``events/``: one small file per finished pipelined region, written by the JobMaster
  once every subtask of the region finished (and so closed its result files): which
  attempt of each subtask finished, when, and what it counted.

A new ApplicationMaster attempt replays the events: a region whose every subtask is
logged is not run again, and its consumers read its results from ``results/``. The
directory goes when the job ends, whatever its outcome.

Events are written and the directory removed on a thread of the log's own, never on
the JobMaster's main thread: a slow NameNode delays recovery's bookkeeping, not the job.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import AbstractSet, Any

from yarnflow.appmaster.jobmaster.settings import StorageSettings
from yarnflow.appmaster.attempt_fence import NO_FENCE, AttemptFence
from yarnflow.core.ids import JobID
from yarnflow.appmaster.jobmaster.executiongraph import (ExecutionGraph, ExecutionState,
                                                         ExecutionVertex)
from yarnflow.appmaster.jobmaster.failover.regions import (PipelinedRegion, pipelined_regions,
                                                           vertex_regions)
from yarnflow.core.jobgraph import PartitionType, ScheduleMode
from yarnflow.core.fs import FileSystem, open_filesystem
from yarnflow.core.messages import OperatorMetrics, TaskMetrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinishedSubtask:
    """One subtask as an event remembers it."""
    vertex_id: str
    subtask_index: int
    attempt_number: int
    timestamps: dict[str, float] = field(default_factory=dict)   # ExecutionState name -> time
    metrics: TaskMetrics | None = None

    def to_json(self) -> dict[str, Any]:
        return {"vertex": self.vertex_id, "subtask": self.subtask_index,
                "attempt": self.attempt_number, "timestamps": self.timestamps,
                "metrics": dataclasses.asdict(self.metrics) if self.metrics else None}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "FinishedSubtask":
        metrics = data.get("metrics")
        return FinishedSubtask(
            data["vertex"], int(data["subtask"]), int(data["attempt"]),
            {k: float(v) for k, v in (data.get("timestamps") or {}).items()},
            TaskMetrics(**{**metrics, "records_in_per_input":
                           tuple(metrics.get("records_in_per_input", ())),
                           "produced_bytes": tuple(tuple(sizes) for sizes in
                                                   metrics.get("produced_bytes", ())),
                           "operators": tuple(OperatorMetrics(**op)
                                              for op in metrics.get("operators", ())),
                           "key_range": tuple(metrics.get("key_range", ()))})
            if metrics else None)


class JobStorage:
    """The job's directory on the cluster file system: its stored results and, with job
    recovery on, its event log."""

    def __init__(self, fs: FileSystem, job_dir: str, events: bool,
                 fence: AttemptFence = NO_FENCE) -> None:
        self.fs = fs
        self.fence = fence      # a replaced ApplicationMaster attempt logs and removes nothing
        self.job_dir = job_dir.rstrip("/")
        self.events_enabled = events
        self._events_dir = f"{self.job_dir}/events"
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="job-events")

    @staticmethod
    def of(storage: StorageSettings, job_id: JobID,
           fence: AttemptFence = NO_FENCE) -> "JobStorage | None":
        """None when BLOCKING results stay on the producers' disks."""
        if storage.store != "dfs":
            return None
        root = storage.root
        return JobStorage(open_filesystem(root, storage.filesystem), f"{root}/{job_id}",
                          storage.recovery, fence)

    def prepare(self) -> None:
        """The job's directory, for its owner's eyes only: results are the job's data."""
        self.fs.mkdirs_private(self.job_dir)

    def result_dir(self, result_id: str) -> str:
        safe = result_id.replace("->", "-").replace("/", "_").replace(">", "_")
        return f"{self.job_dir}/results/{safe}"

    # --- the event log -----------------------------------------------------------------
    def region_finished(self, subtasks: list[FinishedSubtask]) -> "Future[None]":
        """Log a finished region; written whole (a hidden name, then renamed) or not at
        all, so a replay never reads half an event."""
        first = subtasks[0]
        name = f"{first.vertex_id}.{first.subtask_index}.{first.attempt_number}.json"
        data = json.dumps({"subtasks": [s.to_json() for s in subtasks]}).encode()
        return self._writer.submit(self._write, name, data)

    def _write(self, name: str, data: bytes) -> None:
        try:
            self.fence.check("logging a finished region")
            self.fs.mkdirs(self._events_dir)
            self.fs.write_whole(f"{self._events_dir}/{name}", data)
        except Exception as err:   # noqa: BLE001 - recovery degrades, the job goes on
            log.warning("could not log a finished region in %s (a new ApplicationMaster "
                        "attempt would run it again): %s: %s", self._events_dir,
                        type(err).__name__, err)

    def replay(self) -> dict[tuple[str, int], FinishedSubtask]:
        """Every logged subtask, by (vertex id, subtask index): the latest attempt that
        finished. Empty when nothing was logged (a first attempt)."""
        finished: dict[tuple[str, int], FinishedSubtask] = {}
        for name in self.fs.list_dir(self._events_dir):
            if name.startswith(".") or not name.endswith(".json"):
                continue
            try:
                with self.fs.open_input_stream(f"{self._events_dir}/{name}") as source:
                    data = json.loads(source.read())
            except (OSError, ValueError) as err:
                log.warning("job event %s unreadable, its region runs again: %s", name, err)
                continue
            for item in data.get("subtasks", []):
                subtask = FinishedSubtask.from_json(item)
                key = (subtask.vertex_id, subtask.subtask_index)
                if key not in finished or finished[key].attempt_number < subtask.attempt_number:
                    finished[key] = subtask
        return finished

    # --- the end -----------------------------------------------------------------------
    def discard(self) -> "Future[None]":
        """Remove the job's directory once the events queued before are written."""
        def remove() -> None:
            try:
                self.fence.check(f"removing {self.job_dir}")
                self.fs.delete(self.job_dir)
            except Exception as err:   # noqa: BLE001 - named, and left for the operator
                log.warning("could not remove the job's stored results %s: %s: %s",
                            self.job_dir, type(err).__name__, err)
        done = self._writer.submit(remove)
        self._writer.shutdown(wait=False)
        return done


# --- the ExecutionGraph's side -------------------------------------------------------
def finished_region_event(region: PipelinedRegion, sinks: AbstractSet[str]) -> list[FinishedSubtask]:
    """The event of a region that just finished, if it is one a new attempt may skip:
    every subtask FINISHED, every result it hands on stored (a PIPELINED one is read
    inside the region: it joins its two sides), and no sink among them (a sink's output
    is committed at the job's end, by the attempt that ends it). Empty otherwise."""
    members = region.vertices
    if any(v.current.state is not ExecutionState.FINISHED for v in members):
        return []
    if any(v.job_vertex.id in sinks or
           any(r.partition_type is PartitionType.BLOCKING and not r.store
               for r in v.job_vertex.produced) for v in members):
        return []
    return [FinishedSubtask(v.job_vertex.id, v.subtask_index, v.current.attempt_number,
                            {state.name: at for state, at in v.current.state_timestamps.items()},
                            v.current.metrics) for v in members]


def restore_finished_regions(graph: ExecutionGraph, regions: dict[ExecutionVertex, PipelinedRegion],
                             logged: dict[tuple[str, int], FinishedSubtask]) -> int:
    """Make FINISHED the subtasks of every region ``logged`` whole; how many. A source
    vertex is taken over whole or not at all: its splits were handed out on demand, so
    a subtask of it that ran again could not tell which its siblings had read."""
    if not logged:
        return 0
    taken = {r for r in regions.values()
             if all((v.job_vertex.id, v.subtask_index) in logged for v in r.vertices)}
    changed = True
    while changed:
        changed = False
        for ejv in graph.vertices_topologically():
            if ejv.is_source:
                whole = [regions[v] in taken for v in ejv.task_vertices]
                if any(whole) and not all(whole):
                    taken -= {regions[v] for v in ejv.task_vertices}
                    changed = True
    restored = 0
    for vertex in graph.all_execution_vertices():
        if regions[vertex] not in taken:
            continue
        entry = logged[(vertex.job_vertex.id, vertex.subtask_index)]
        before = vertex.current
        graph.register_attempt(vertex.restore_finished(
            entry.attempt_number, {ExecutionState[k]: t for k, t in entry.timestamps.items()
                                   if k in ExecutionState.__members__}, entry.metrics),
            replaces=before)
        restored += 1
    return restored


class StoredResults:
    """The job's BLOCKING results on the cluster file system and, with job recovery,
    its event log: what a JobMaster takes over from an earlier ApplicationMaster
    attempt when it starts, and the regions it logs as they finish."""

    def __init__(self, storage: JobStorage, graph: ExecutionGraph, sinks: AbstractSet[str]) -> None:
        self.storage = storage
        self._graph = graph
        self._sinks = sinks
        self._regions: dict[ExecutionVertex, PipelinedRegion] = {}
        self._version = graph.version

    def take_over(self) -> str | None:
        """Send BLOCKING results to the cluster file system and, with job recovery, take
        over what an earlier ApplicationMaster attempt finished; the failure, if any."""
        graph, storage = self._graph, self.storage
        # one read within its own pipelined region (a self-join's probe side) stays on
        # the executor: the region runs, fails and restarts whole, so the file system
        # would keep it for nobody, and its consumer starts before it is reported whole
        region = vertex_regions(graph)
        blocking = [r for r in graph.results.values()
                    if r.partition_type is PartitionType.BLOCKING
                    and region[r.producer.id] != region[r.consumer.id]]
        if not blocking:
            return None
        try:
            storage.prepare()
            logged = storage.replay() if storage.events_enabled else {}
        except Exception as err:    # noqa: BLE001 - unreachable, refused: named below
            return (f"the job's results cannot be stored in {storage.job_dir}: "
                    f"{type(err).__name__}: {err} (execution.batch.partition-store.dir; "
                    "or execution.batch.partition-store: local)")
        for result in blocking:
            result.store = storage.result_dir(result.id)
        # A stored result is read from its files once its producers finished, so its
        # consumers start then (an EAGER consumer would read files being written).
        # Only BLOCKING exchanges separate regions, so nothing else changes.
        graph.schedule_mode = ScheduleMode.LAZY_FROM_SOURCES
        if storage.events_enabled:
            self._regions = pipelined_regions(graph)
            self._version = graph.version
            restored = restore_finished_regions(graph, self._regions, logged)
            if restored:
                log.info("job %s: %d of %d subtasks finished under an earlier "
                         "ApplicationMaster attempt; their results are read from %s",
                         graph.job_id[:8], restored, len(self._regions), storage.job_dir)
        return None

    def subtask_finished(self, vertex: ExecutionVertex) -> None:
        if self._regions and self._version != self._graph.version:
            self._regions = pipelined_regions(self._graph)   # an adaptive vertex's subtasks came
            self._version = self._graph.version
        region = self._regions.get(vertex)
        if region is None:
            return
        event = finished_region_event(region, self._sinks)
        if event:
            self.storage.region_finished(event)
