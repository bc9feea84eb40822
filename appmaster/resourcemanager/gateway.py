"""How other components reach the ResourceManager (Flink's ResourceManagerGateway).

A JobMaster's handle is bound to its job and fenced both ways (the JobMasterId it
registered with, the ResourceManagerId it was given); an executor's handle carries
the ResourceManagerId the executor registered with, which changes when it registers
again. The gRPC implementations are in ``yarnflow.rpc.gateways.resourcemanager``."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Protocol

from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.ids import AllocationID, JobID, JobMasterId, ResourceID, ResourceManagerId
from yarnflow.core.messages import SlotReport, TaskExecutorRegistration
from yarnflow.core.resources import ResourceSpec


class ResourceManagerGateway(Protocol):
    """The ResourceManager as one JobMaster sees it."""
    def request_slot(self, allocation_id: AllocationID, profile: ResourceSpec,
                     preferred_hosts: tuple[str, ...] = (), exact: bool = False,
                     wanted: int = 0) -> "Future[Any]":
        """One slot of ``profile`` (idempotent per AllocationID); ``preferred_hosts``,
        best first, is where a worker started for it should run; ``exact``: of that
        profile, never a larger one; ``wanted``: slots of it the job holds at once."""
        ...
    def cancel_slot_request(self, allocation_id: AllocationID) -> "Future[Any]": ...

    def notify_blocked_nodes(self, nodes: list[BlockedNode]) -> "Future[list[str]]":
        """Hosts the job would block: the ResourceManager keeps those it accepts (the
        hosts it answers) free of new slots and containers for the whole cluster until
        each one's time is up; it never blocks the last host it knows."""
        ...

    def disconnect_job_master(self, reason: str) -> "Future[Any]": ...


class ResourceManagerRegistrationGateway(Protocol):
    """The ResourceManager as a JobMaster sees it before it registered."""

    def register_job_master(self, job_id: JobID, job_master_id: JobMasterId,
                            address: str) -> "Future[ResourceManagerId]":
        """The ResourceManagerId that fences the JobMaster's later calls (its
        ``ResourceManagerGateway`` carries it)."""
        ...


class ResourceManagerExecutorGateway(Protocol):
    """The ResourceManager as a TaskExecutor sees it."""

    def register_task_executor(self, registration: TaskExecutorRegistration) -> "Future[str]":
        """The ResourceManagerId that fences the executor's later calls; a refusal
        fails the future with ``Refused``."""
        ...

    def heartbeat_from_task_executor(self, resource_manager_id: ResourceManagerId, resource_id: ResourceID,
                                     report: SlotReport, holds_partitions: bool) -> "Future[bool]":
        """Whether the ResourceManager knows this executor; False: register again."""
        ...

    def notify_slot_available(self, resource_manager_id: ResourceManagerId, resource_id: ResourceID,
                              slot_index: int, allocation_id: AllocationID) -> "Future[None]": ...
