"""The resource driver interface (Flink's ResourceManagerDriver)."""
from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Protocol

from yarnflow.core.ids import ResourceID
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.core.resources import ResourceSpec


@dataclass(frozen=True)
class NodeReport:
    """One live host as YARN's scheduler sees it: what it has free now and what it has
    at all (free and used), in the units YARN grants (whole vcores, MB)."""
    host: str
    free_vcores: int
    free_mb: int
    total_vcores: int
    total_mb: int
    labels: frozenset[str] = frozenset()

    def describe(self) -> str:
        return (f"{self.host}: {self.free_vcores} of {self.total_vcores} vcores and "
                f"{self.free_mb} of {self.total_mb} MB free")


class WorkerEvents(Protocol):
    """What a driver reports back; called from any thread."""
    def on_worker_terminated(self, resource_id: ResourceID, cause: str,
                             spec_fault: bool = True) -> None:
        """A worker ended, or never started. ``spec_fault`` is False when the cause says
        nothing about the worker spec itself (its host was lost, YARN preempted it, the
        cluster answered late): such a failed start is retried without counting toward
        resourcemanager.start-worker-max-failures."""
        ...

    def on_worker_moved(self, resource_id: ResourceID, new_resource_id: ResourceID) -> None:
        """A starting worker asked on a host is asked again anywhere, under a new id."""
        ...


class ResourceDriver(abc.ABC):
    """Starts a worker for a worker spec and stops one by its resource id.

    ``request_worker`` returns the resource id the new TaskExecutor will register with
    (a container id on YARN), so the ResourceManager can match the registration to
    the request.
    """

    @abc.abstractmethod
    def start(self, events: WorkerEvents, resource_manager_address: str) -> None: ...

    @abc.abstractmethod
    def request_worker(self, spec: WorkerSpec, hosts: tuple[str, ...] = (),
                       avoid: frozenset[str] = frozenset()) -> ResourceID:
        """``hosts``, best first, is where the worker should run, and ``avoid`` where it
        should not (blocked hosts); a driver that cannot place workers (``local``) or
        has no way to ask for those hosts ignores them."""

    @abc.abstractmethod
    def release_worker(self, resource_id: ResourceID) -> None: ...

    def node_reports(self) -> list[NodeReport] | None:
        """The live hosts workers may run on, with what each has free; None where the
        driver cannot tell (``local``; YARN without access to its node reports). It
        asks the cluster: never call it on a main thread."""
        return None

    def worker_hosts(self) -> set[str]:
        """The hosts workers may be asked on, as far as the driver knows them."""
        return set()

    @abc.abstractmethod
    def max_worker_resources(self) -> ResourceSpec: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    def placements(self) -> dict[str, tuple[str, str]]:
        """Resource id -> (the cluster's container id, its node) of the workers it
        started, for the web UI; it may ask the cluster, so never call it on a main
        thread. Empty where workers have no such names (``local``)."""
        return {}
