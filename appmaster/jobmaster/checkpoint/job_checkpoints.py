"""A streaming job's checkpointing, as its JobMaster sets it up: the completed
checkpoints an earlier attempt left (found on the file system), the coordinator, what
each deployment restores, and the scheduler's hooks into it. Runs on the JobMaster's
main thread."""
from __future__ import annotations

import logging
from typing import Any

import uuid
from concurrent.futures import Future

from yarnflow.appmaster.jobmaster.checkpoint.coordinator import (CheckpointCoordinator,
                                                                 TriggerRefused)
from yarnflow.appmaster.jobmaster.checkpoint.job_tasks import ExecutionGraphTasks
from yarnflow.appmaster.jobmaster.checkpoint.store import CompletedCheckpointStore
from yarnflow.core.streaming.checkpoint_metadata import (CheckpointFormatError,
                                                         CompletedCheckpoint, read_checkpoint)
from yarnflow.appmaster.jobmaster.executiongraph import Execution, ExecutionGraph
from yarnflow.appmaster.jobmaster.scheduler.scheduler_ng import SchedulerNG
from yarnflow.appmaster.jobmaster.settings import StreamingSettings
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.fs.opening import open_filesystem
from yarnflow.core.errors import Refused
from yarnflow.core.ids import ExecutionAttemptID
from yarnflow.core.streaming.events import CheckpointKind
from yarnflow.rpc.gateways.calls import then
from yarnflow.core.streaming.key_groups import default_max_parallelism
from yarnflow.core.streaming.snapshots import SubtaskRestore
from yarnflow.core.streaming.snapshots import decode_ack
from yarnflow.rpc.endpoint import MainThreadExecutor

log = logging.getLogger(__name__)


class JobCheckpoints:
    def __init__(self, graph: ExecutionGraph, settings: StreamingSettings,
                 filesystem: FileSystemSettings, main: MainThreadExecutor,
                 scheduler: SchedulerNG) -> None:
        self._graph = graph
        self._settings = settings
        self._filesystem = filesystem
        self._main = main
        self._scheduler = scheduler
        widest = max((v.parallelism for v in graph.job_vertices.values()), default=1)
        self.max_parallelism = settings.max_parallelism if settings.max_parallelism > 0 \
            else default_max_parallelism(widest)
        self.coordinator: CheckpointCoordinator | None = None
        self._initial: CompletedCheckpoint | None = None     # a savepoint it starts from
        self._files_cache: tuple[str, dict[str, tuple[str, ...]]] = ("", {})

    def start(self) -> str | None:
        """Before the job's tasks deploy: recover what earlier attempts completed. The
        failure, in one line, when the checkpoint directory cannot be used."""
        directory = self._settings.checkpoints.directory
        try:
            fs = open_filesystem(directory, self._filesystem)
            job_dir = f"{directory}/{self._graph.job_id}"
            fs.mkdirs(job_dir)
            store = CompletedCheckpointStore(fs, job_dir, self._settings.checkpoints.retained)
            recovered = store.recover()
        except OSError as err:
            return (f"state.checkpoints.dir {directory} cannot be used: {err}. Fix: name a "
                    "directory this job may write on the cluster's file system")
        tasks = ExecutionGraphTasks(self._graph, self._main, self.max_parallelism,
                                    self._scheduler.fail_over,
                                    lambda checkpoint_id: self._pending(checkpoint_id))
        self.coordinator = CheckpointCoordinator(self._graph.job_id, self._settings.checkpoints,
                                                 self._main, tasks, store)
        if recovered:
            latest = recovered[-1]
            log.info("job %s resumes from checkpoint %d (%s)", self._graph.job_id,
                     latest.checkpoint_id, latest.location)
            self.coordinator.restored(latest)
        elif self._settings.savepoint_path:
            try:
                savepoint_fs = open_filesystem(self._settings.savepoint_path, self._filesystem)
                self._initial = read_checkpoint(savepoint_fs, self._settings.savepoint_path)
            except (OSError, CheckpointFormatError) as err:
                return f"the savepoint to start from cannot be read: {err}"
            log.info("job %s starts from savepoint %s", self._graph.job_id,
                     self._initial.location)
            self.coordinator.restored(self._initial)
        self._scheduler.set_checkpoint_hooks(self)
        return None

    def savepoint(self, directory: str, terminate: bool) -> "Future[str]":
        """Trigger a savepoint into a new directory under ``directory``."""
        assert self.coordinator is not None
        base = directory or self._settings.savepoints_dir
        if not base:
            raise Refused("no directory for the savepoint. Fix: name one (yarnflow savepoint "
                          "JOB DIR) or set state.savepoints.dir")
        location = self._filesystem.resolve(base).rstrip("/") + \
            f"/savepoint-{self._graph.job_id[:6]}-{uuid.uuid4().hex[:12]}"
        kind = CheckpointKind.TERMINATE if terminate else CheckpointKind.SAVEPOINT
        try:
            done = self.coordinator.trigger(kind, location)
        except TriggerRefused as err:
            raise Refused(f"the savepoint cannot start now: {err}") from None
        return then(done, lambda completed: completed.location)

    def _pending(self, checkpoint_id: int) -> bool:
        return self.coordinator is not None and checkpoint_id in self.coordinator.pending_ids

    def run(self) -> None:
        """The job's tasks are being deployed: periodic checkpoints from now."""
        if self.coordinator is not None:
            self.coordinator.start()

    def stop(self) -> None:
        if self.coordinator is not None:
            self.coordinator.stop()

    def stats(self) -> dict[str, Any]:
        """Flink's ``/jobs/:id/checkpoints``, with the job's checkpointing settings."""
        if self.coordinator is None:
            return {}
        settings = self._settings.checkpoints
        return {**self.coordinator.stats.as_json(),
                "config": {"interval": int(settings.interval * 1000),
                           "timeout": int(settings.timeout * 1000),
                           "min_pause": int(settings.min_pause * 1000),
                           "max_concurrent": settings.max_concurrent,
                           "tolerable_failed_checkpoints": settings.tolerable_failures,
                           "checkpoint_storage": settings.directory,
                           "max_parallelism": self.max_parallelism}}

    # --- the scheduler's hooks ---------------------------------------------------------------
    def task_finished(self, attempt: ExecutionAttemptID) -> None:
        if self.coordinator is not None:
            self.coordinator.task_finished(attempt)

    def task_failed(self) -> None:
        if self.coordinator is not None:
            self.coordinator.task_failed()

    def restore_for(self, execution: Any) -> bytes:
        assert isinstance(execution, Execution)
        latest = self.coordinator.latest() if self.coordinator is not None else None
        latest = latest or self._initial
        if latest is None:
            return b""
        vertex = execution.vertex
        name, index = vertex.job_vertex.name, vertex.subtask_index     # finished: by name
        operators: dict[str, tuple[bytes, tuple[str, ...]]] = {}
        files_of = self._files_of(latest)
        for uid, state in latest.operators.items():     # the task takes its operators' uids
            own = state.subtasks.get(index)
            operators[uid] = (own.inline if own is not None else b"", files_of[uid])
        finished = (name, index) in latest.finished
        return SubtaskRestore(latest.checkpoint_id, operators, finished).encode()

    def _files_of(self, checkpoint: CompletedCheckpoint) -> dict[str, tuple[str, ...]]:
        """Each uid's files over all its subtasks, as full URIs: the same for every
        subtask deployed from ``checkpoint``, so made once per checkpoint, not once per
        deployment (a restart of P subtasks would otherwise build P lists of P files)."""
        if self._files_cache[0] != checkpoint.location:
            self._files_cache = (checkpoint.location, {
                uid: tuple(f"{checkpoint.location}/{f}" for s in state.subtasks.values()
                           for f in s.files)
                for uid, state in checkpoint.operators.items()})
        return self._files_cache[1]

    # --- from tasks -------------------------------------------------------------------------
    def acknowledge(self, attempt: ExecutionAttemptID, checkpoint_id: int, snapshot: bytes) -> None:
        if self.coordinator is not None:
            states, metrics = decode_ack(snapshot)
            self.coordinator.acknowledge(attempt, checkpoint_id, states, metrics)

    def decline(self, attempt: ExecutionAttemptID, checkpoint_id: int, reason: str) -> None:
        if self.coordinator is not None:
            self.coordinator.decline(attempt, checkpoint_id, reason)
