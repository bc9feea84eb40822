"""What components say to each other through their gateways, as plain dataclasses.
Components take and return these; protobuf exists only at the rpc edge
(``yarnflow.rpc.codec``)."""
from __future__ import annotations

from dataclasses import dataclass, field

from yarnflow.core.ids import AllocationID, JobID, JobMasterId, ResourceID
from yarnflow.core.resources import ResourceSpec


@dataclass(frozen=True)
class TaskExecutorLocation:
    """Where a TaskExecutor can be reached: control calls and the data plane."""
    resource_id: str
    host: str
    rpc_address: str = ""
    data_address: str = ""


@dataclass(frozen=True)
class SlotStatus:
    """One slot as its executor sees it; ``allocation_id`` is empty when free."""
    slot_index: int
    profile: ResourceSpec
    allocation_id: str = ""
    job_id: str = ""


@dataclass(frozen=True)
class SlotReport:
    """An executor's slot table. ``version`` grows with every change, so a report
    overtaken by a later allocation is recognised and ignored."""
    slots: tuple[SlotStatus, ...] = ()
    version: int = 0


@dataclass(frozen=True)
class TaskExecutorRegistration:
    location: TaskExecutorLocation
    slot_report: SlotReport
    total_resources: ResourceSpec | None = None
    worker_spec: str = ""      # the worker spec the driver started it for


@dataclass(frozen=True)
class SlotAllocation:
    """The ResourceManager's order to an executor: give this slot to that job."""
    slot_index: int
    job_id: JobID
    allocation_id: AllocationID
    profile: ResourceSpec
    job_master_id: JobMasterId
    job_master_address: str


@dataclass(frozen=True)
class SlotRequest:
    """A JobMaster's request for one slot of ``profile``, idempotent per AllocationID."""
    allocation_id: AllocationID
    job_id: JobID
    job_master_id: JobMasterId
    job_master_address: str
    profile: ResourceSpec


@dataclass(frozen=True)
class WorkerInfo:
    resource_id: ResourceID
    worker_spec: str
    slot_profile: ResourceSpec | None
    num_slots: int
    free_slots: int
    rpc_address: str = ""
    data_address: str = ""


@dataclass(frozen=True)
class ClusterOverview:
    workers: tuple[WorkerInfo, ...] = ()
    pending_workers: int = 0
    pending_slot_requests: int = 0
    workers_started_per_spec: dict[str, int] = field(default_factory=dict)
