"""Which shared parts of deployments each executor was sent, and the big ones offloaded.

A TaskExecutor keeps the shared parts it is sent (``taskexecutor/shared_parts.py``), so a
deployment carries a part only to an executor that was not sent it yet: a vertex's
TaskInformation and an ALL_TO_ALL input's shuffle descriptors reach each executor once,
whatever the number of its subtasks there.

A part counts as sent when it is sent, not when it is acknowledged, so ten deployments to
one executor at once carry it once. One of them can overtake its carrier on the way, and
a carrier can be lost or the executor can have let the part go (its cache is bounded):
the executor then refuses the deployment with ``MissingSharedParts`` and it is sent once
more with every part it names. A carrier that never arrived makes its parts unsent.

A part of at least ``blob.offload.minsize`` bytes is written once to the cluster file
system (Flink offloads to its blob server), and a deployment carries its file's name
instead; each executor reads it from there once. The files are written on a thread of
their own, never on the JobMaster's main thread, and go when the job ends.
"""
from __future__ import annotations

import dataclasses
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterable

from yarnflow.appmaster.jobmaster.settings import StorageSettings
from yarnflow.core.deployment import SharedPart, TaskDeploymentDescriptor
from yarnflow.core.fs import FileSystem, FileSystemSettings, open_filesystem
from yarnflow.core.ids import JobID, ResourceID

log = logging.getLogger(__name__)


def _value(part: "SharedPart | Future[SharedPart]") -> SharedPart:
    return part.result() if isinstance(part, Future) else part


class DeploymentParts:
    def __init__(self, offload_min_size: int, offload_dir: str = "",
                 filesystem: FileSystemSettings | None = None) -> None:
        """Without ``filesystem`` nothing is offloaded. The file system is opened when the
        first part is offloaded, on the writer thread."""
        self._min_size = offload_min_size
        self._dir = offload_dir.rstrip("/")
        self._settings = filesystem
        self._fs: FileSystem | None = None
        self._sent: dict[ResourceID, set[str]] = {}
        self._offloaded: dict[str, Future[SharedPart]] = {}
        self._writer: ThreadPoolExecutor | None = None

    @staticmethod
    def of(storage: StorageSettings, job_id: JobID) -> "DeploymentParts":
        """Offloading beside the partition store (on the cluster file system on YARN)."""
        return DeploymentParts(storage.offload_min_size,
                               f"{storage.root}/deployment-parts/{job_id}", storage.filesystem)

    def prepare(self, resource_id: ResourceID, descriptor: TaskDeploymentDescriptor,
                everything: bool = False
                ) -> "TaskDeploymentDescriptor | Future[TaskDeploymentDescriptor]":
        """``descriptor`` with the parts its executor was not sent (``everything``: all it
        names) carried: at once (on the hot path of every deployment, so without a
        Future or a copy when it carries nothing), or as a Future while a big part among
        them is being offloaded."""
        sent = self._sent.setdefault(resource_id, set())
        carried: list[SharedPart | Future[SharedPart]] = []
        for part in descriptor.shared_parts():
            if everything or part.key not in sent:
                sent.add(part.key)
                carried.append(self._as_sent(part))
        if not carried:
            return descriptor
        if not any(isinstance(p, Future) and not p.done() for p in carried):
            return dataclasses.replace(descriptor, carried=tuple(_value(p) for p in carried))
        assert self._writer is not None
        # the writer runs in order: the offloads this waits for are done by then
        return self._writer.submit(lambda: dataclasses.replace(
            descriptor, carried=tuple(_value(p) for p in carried)))

    def not_delivered(self, resource_id: ResourceID, parts: Iterable[SharedPart]) -> None:
        """The deployment that carried ``parts`` did not reach the executor."""
        sent = self._sent.get(resource_id)
        if sent is not None:
            sent.difference_update(p.key for p in parts)

    def executor_gone(self, resource_id: ResourceID) -> None:
        self._sent.pop(resource_id, None)

    def sent_to(self, resource_id: ResourceID) -> frozenset[str]:
        return frozenset(self._sent.get(resource_id, ()))

    # --- offloading --------------------------------------------------------------------
    def _as_sent(self, part: SharedPart) -> "SharedPart | Future[SharedPart]":
        if self._settings is None or len(part.data) < self._min_size:
            return part
        offloaded = self._offloaded.get(part.key)
        if offloaded is None:
            if self._writer is None:
                self._writer = ThreadPoolExecutor(1, thread_name_prefix="deployment-offload")
            offloaded = self._offloaded[part.key] = self._writer.submit(self._offload, part)
        return offloaded

    def _offload(self, part: SharedPart) -> SharedPart:
        assert self._settings is not None
        path = f"{self._dir}/{part.key}"
        try:
            if self._fs is None:
                self._fs = open_filesystem(self._dir, self._settings)
            self._fs.mkdirs_private(self._dir)
            self._fs.write_whole(path, part.data)   # False: the same bytes, from an earlier attempt
        except Exception as err:   # noqa: BLE001 - sent inline instead: slower, not wrong
            log.warning("could not offload a deployment part of %d bytes to %s (%s: %s): "
                        "sending it with the deployments instead", len(part.data), self._dir,
                        type(err).__name__, err)
            return part
        log.info("offloaded a deployment part of %d bytes to %s", len(part.data), path)
        return SharedPart(part.key, offloaded=path)

    def discard(self) -> "Future[None]":
        """Remove the offloaded files: the job is over."""
        if self._writer is None:
            nothing: Future[None] = Future()
            nothing.set_result(None)
            return nothing
        writer, self._writer = self._writer, None

        def remove() -> None:
            try:
                if self._fs is not None and self._fs.exists(self._dir):
                    self._fs.delete(self._dir)
            except Exception as err:   # noqa: BLE001 - litter, not a failure of the job
                log.warning("could not remove the offloaded deployment parts in %s: %s",
                            self._dir, err)
        future = writer.submit(remove)
        writer.shutdown(wait=False)
        return future
