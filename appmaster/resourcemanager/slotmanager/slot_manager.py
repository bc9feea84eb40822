"""The slot manager of the ResourceManager.

A slot request (one per AllocationID, so a repeated request is a no-op) is served by
a free registered slot that fits — on the least-loaded executor, so jobs spread — or
by a worker that is starting, or makes the driver start a worker of the request's
profile. The executors' own slot reports are the truth: a report that contradicts
what the slot manager believes overwrites it. Runs on the ResourceManager's main thread.

Locality is asked for, never waited for (Spark's YARN allocator does the same): a
request that names hosts (where its source subtasks' splits are stored) joins a
starting worker on one of them first, else any starting worker with room, and only
then starts a worker, asked on its best host. So preferring hosts never starts more
workers than the requests need; where YARN cannot place one on the host, it places
it elsewhere (relaxed locality).
"""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from yarnflow.core.ids import AllocationID, JobID, JobMasterId, ResourceID
from yarnflow.core.clock import SYSTEM_CLOCK, Clock
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import check_transition
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.appmaster.resourcemanager.slotmanager.slot_index import SlotIndex
from yarnflow.appmaster.resourcemanager.slotmanager.slots import SlotState, TaskManagerSlot, Worker

if TYPE_CHECKING:
    from yarnflow.core.container_ladder import ContainerLadder
    from yarnflow.appmaster.blocklist import Blocklist

log = logging.getLogger(__name__)

# A busy executor that is lost is replaced by one of its own spec when the restarted
# tasks ask for slots (FLIP-6), so a session gets back the warm executor it had rather
# than the smallest size that would do; after this long its spec is no longer owed.
REPLACEMENT_WINDOW_S = 300.0


class RequestState(enum.Enum):
    """Where a slot request the slot manager still holds stands. A fulfilled request
    (the executor confirmed, or reported the allocation) is no longer held."""
    WAITING = "WAITING"                        # nothing found for it yet
    WAITING_FOR_WORKER = "WAITING_FOR_WORKER"  # reserved on a worker that is starting
    PENDING = "PENDING"                        # a free slot was chosen; its executor has not answered


_R = RequestState
_REQUEST_TRANSITIONS = {
    _R.WAITING: frozenset({_R.WAITING_FOR_WORKER, _R.PENDING}),
    _R.WAITING_FOR_WORKER: frozenset({_R.WAITING, _R.PENDING}),
    _R.PENDING: frozenset({_R.WAITING}),
}


@dataclass
class PendingSlotRequest:
    allocation_id: AllocationID
    job_id: JobID
    job_master_id: JobMasterId
    job_master_address: str
    profile: ResourceSpec
    preferred_hosts: tuple[str, ...] = ()       # best first; where a worker for it should run
    exact: bool = False                         # only a slot of ``profile`` itself serves it
    wanted: int = 0                             # slots of ``profile`` its job holds at once
    state: RequestState = RequestState.WAITING
    assigned: tuple[str, int] | None = None     # (resource id, slot index) while PENDING
    worker: ResourceID | None = None            # the starting worker, while WAITING_FOR_WORKER

    def transition(self, target: RequestState) -> None:
        check_transition(_REQUEST_TRANSITIONS, self.state, target,
                         lambda: f"slot request {self.allocation_id[:8]}")
        self.state = target
        if target is not RequestState.PENDING:
            self.assigned = None
        if target is not RequestState.WAITING_FOR_WORKER:
            self.worker = None


@dataclass
class PendingWorker:
    resource_id: ResourceID
    spec: WorkerSpec
    requested_at: float
    reserved: set[AllocationID] = field(default_factory=set)   # allocation ids it will serve
    replaces: str = ""     # the lost executor it replaces, if it was started as a replacement
    host: str = ""         # the host it was asked on ("" anywhere)
    warm: bool = False     # one of a session's --min-executors, needed by no request


class SlotManagerActions(Protocol):
    """What the slot manager asks of the ResourceManager around it."""
    def start_worker(self, spec: WorkerSpec, hosts: tuple[str, ...] = ()) -> ResourceID:
        """The new worker's resource id; asked on ``hosts[0]`` where the driver can."""
        ...
    def stop_worker(self, resource_id: ResourceID, reason: str) -> None: ...
    def allocate_slot(self, resource_id: ResourceID, slot_index: int, request: PendingSlotRequest) -> None: ...
    def notify_allocation_failure(self, request: PendingSlotRequest, cause: str) -> None: ...


class SlotManager:
    def __init__(self, actions: SlotManagerActions, slots_per_worker: int, overhead_mb: int,
                 max_workers: int, taskmanager_timeout: float,
                 worker_specs: dict[ResourceSpec, WorkerSpec] | None = None,
                 ladder: "ContainerLadder | None" = None, clock: Clock = SYSTEM_CLOCK,
                 blocklist: "Blocklist | None" = None) -> None:
        self._actions = actions
        self._blocklist = blocklist
        self._clock = clock
        self.ladder = ladder
        self._slots_per_worker = slots_per_worker
        self._overhead_mb = overhead_mb
        self._max_workers = max_workers
        self._taskmanager_timeout = taskmanager_timeout
        self.workers: dict[ResourceID, Worker] = {}
        self.pending_workers: dict[ResourceID, PendingWorker] = {}
        self.requests: dict[AllocationID, PendingSlotRequest] = {}
        self.started_per_spec: dict[str, int] = {}
        self._worker_specs = dict(worker_specs or {})
        # lost busy executors not yet replaced: (resource id, spec, when it was lost)
        self._owed: list[tuple[str, WorkerSpec, float]] = []
        self._index = SlotIndex(self.workers)

    def worker_spec_for(self, profile: ResourceSpec, wanted: int = 0) -> WorkerSpec:
        """The planned spec (per-job mode knows its job's profiles up front; a profile
        it did not plan, a later stage's shared slot asked for only what that stage
        needs, gets the smallest planned one it fits), else the
        session's smallest container size that fits (raises NoContainerFits), else
        ``taskmanager.numberOfTaskSlots`` slots of the profile, but no more than the
        ``wanted`` the job holds at once: slots nothing would ever use are memory and
        cores YARN reserves for nothing."""
        planned = self._worker_specs.get(profile)
        if planned is not None:
            return planned
        fitting = [s for s in self._worker_specs.values() if profile.fits_in(s.slot_profile)]
        if fitting:       # a later stage's smaller slot: the smallest planned size holds it
            return min(fitting, key=lambda s: (s.container.memory_mb, s.container.cpu))
        if self.ladder is not None:
            return self.ladder.spec_for(profile)
        slots = min(self._slots_per_worker, wanted) if wanted > 0 else self._slots_per_worker
        return WorkerSpec(profile, slots, self._overhead_mb)

    # --- requests --------------------------------------------------------------------
    def request_slot(self, request: PendingSlotRequest) -> None:
        if request.allocation_id in self.requests or self._slot_of(request.allocation_id):
            return   # idempotent per AllocationID
        self.requests[request.allocation_id] = request
        self._try_fulfill(request)

    def cancel_slot_request(self, allocation_id: AllocationID) -> None:
        request = self.requests.pop(allocation_id, None)
        if request is not None and request.worker in self.pending_workers:
            self.pending_workers[request.worker].reserved.discard(allocation_id)

    def _try_fulfill(self, request: PendingSlotRequest, avoid: tuple[str, int] | None = None) -> None:
        """Serve a waiting request: a free slot (not ``avoid``, the one that was just
        refused), else a place on a starting worker, else a new worker (unless
        resourcemanager.max-workers are running or starting)."""
        slot = self._find_free_slot(request.profile, avoid, request.exact)
        if slot is not None:
            self._assign(request, slot)
            return
        if request.state is RequestState.WAITING_FOR_WORKER:
            return
        spec = self.worker_spec_for(request.profile, request.wanted)
        starting = self._starting_worker_for(request, spec)
        if starting is not None:
            starting.reserved.add(request.allocation_id)
            request.transition(RequestState.WAITING_FOR_WORKER)
            request.worker = starting.resource_id
            return
        if len(self.workers) + len(self.pending_workers) >= self._max_workers:
            log.info("slot request %s waits: %d workers running or starting is "
                     "resourcemanager.max-workers", request.allocation_id[:8], self._max_workers)
            return
        replaces, spec = self._owed_spec(request.profile, spec)
        resource_id = self._actions.start_worker(spec, request.preferred_hosts)
        self.started_per_spec[spec.name] = self.started_per_spec.get(spec.name, 0) + 1
        pending = PendingWorker(resource_id, spec, self._clock.monotonic(),
                                {request.allocation_id}, replaces,
                                request.preferred_hosts[0] if request.preferred_hosts else "")
        self.pending_workers[resource_id] = pending
        request.transition(RequestState.WAITING_FOR_WORKER)
        request.worker = resource_id

    def _assign(self, request: PendingSlotRequest, slot: TaskManagerSlot) -> None:
        slot.transition(SlotState.PENDING)
        slot.assign(request.allocation_id, request.job_id)
        self._touch(slot.resource_id)
        if request.worker is not None and request.worker in self.pending_workers:
            self.pending_workers[request.worker].reserved.discard(request.allocation_id)
        request.transition(RequestState.PENDING)
        request.assigned = (slot.resource_id, slot.index)
        self._actions.allocate_slot(slot.resource_id, slot.index, request)

    def _free_slots_by_spec(self) -> dict[WorkerSpec, list[TaskManagerSlot]]:
        """The free slots of running workers (not blocked), by their worker's spec: one
        pass, however many requests wait for starting workers."""
        blocked = self._blocked()
        free: dict[WorkerSpec, list[TaskManagerSlot]] = {}
        for worker in self.workers.values():
            if worker.host not in blocked and worker.spec is not None:
                free.setdefault(worker.spec, []).extend(
                    s for s in worker.slots if s.state is SlotState.FREE)
        return free

    def _free_slot_like_its_worker(self, request: PendingSlotRequest,
                                   free: dict[WorkerSpec, list[TaskManagerSlot]]
                                   ) -> TaskManagerSlot | None:
        """For a request waiting for a starting worker: a free slot it fits on a running
        worker of that worker's very spec (the container it would get)."""
        starting = self.pending_workers.get(request.worker) if request.worker else None
        if starting is None or request.preferred_hosts:
            return None
        for slot in free.get(starting.spec, ()):
            if slot.state is SlotState.FREE and request.profile.fits_in(slot.profile):
                return slot     # still free: a request placed before it may have taken it
        return None

    def _starting_worker_for(self, request: PendingSlotRequest, spec: WorkerSpec) -> PendingWorker | None:
        """A starting worker with room the request fits: one asked on a host the request
        prefers, else any."""
        blocked = self._blocked()
        fitting = [p for p in self.pending_workers.values()
                   if (p.spec == spec or (p.replaces and request.profile.fits_in(p.spec.slot_profile)))
                   and len(p.reserved) < p.spec.num_slots and p.host not in blocked]
        local = [p for p in fitting if p.host and p.host in request.preferred_hosts]
        return next(iter(local or fitting), None)

    def _owed_spec(self, profile: ResourceSpec, fallback: WorkerSpec) -> tuple[str, WorkerSpec]:
        """The spec of a lost busy executor the profile fits in (taken off the list), or
        ``fallback``; with the lost executor's id."""
        now = self._clock.monotonic()
        self._owed = [o for o in self._owed if now - o[2] <= REPLACEMENT_WINDOW_S]
        for i, (lost, spec, _) in enumerate(self._owed):
            if profile.fits_in(spec.slot_profile):
                del self._owed[i]
                log.info("starting a %s executor to replace the lost %s", spec.name, lost)
                return lost, spec
        return "", fallback

    def add_starting_worker(self, resource_id: ResourceID, spec: WorkerSpec,
                            warm: bool = False) -> None:
        """A worker the driver started without being asked (per-job containers YARN
        allocates with the application, a session's warm ones): requests reserve it
        like one they started."""
        self.started_per_spec[spec.name] = self.started_per_spec.get(spec.name, 0) + 1
        self.pending_workers[resource_id] = PendingWorker(resource_id, spec,
                                                          self._clock.monotonic(), warm=warm)

    def _find_free_slot(self, profile: ResourceSpec, avoid: tuple[str, int] | None = None,
                        exact: bool = False) -> TaskManagerSlot | None:
        """A free slot that fits, of the exact profile first (``exact``: only that), on
        the least-loaded executor: from the heaps, or by a scan after a refusal (rare) to
        put the refusing slot last."""
        blocked = self._blocked()
        if avoid is not None or blocked:
            return self._scan_free_slots(profile, avoid, blocked, exact)
        return self._index.free_slot(profile, exact)

    def _blocked(self) -> frozenset[str]:
        return self._blocklist.hosts() if self._blocklist is not None else frozenset()

    def _scan_free_slots(self, profile: ResourceSpec, avoid: tuple[str, int] | None,
                         blocked: frozenset[str] = frozenset(),
                         exact: bool = False) -> TaskManagerSlot | None:
        """A scan, not the heaps: after a refusal, or while hosts are blocked (whose
        slots are passed over), both rare."""
        best: TaskManagerSlot | None = None
        best_key: tuple[int, int, float] | None = None
        for worker in self.workers.values():
            if worker.host in blocked:
                continue
            load = worker.load()
            for slot in worker.slots:
                if slot.state is SlotState.FREE and (slot.profile == profile if exact
                                                     else profile.fits_in(slot.profile)):
                    # a slot that just refused comes last, but still before a new worker
                    refused = 1 if (slot.resource_id, slot.index) == avoid else 0
                    key = (refused, 0 if slot.profile == profile else 1, load)
                    if best_key is None or key < best_key:
                        best, best_key = slot, key
        return best

    def allocation_confirmed(self, allocation_id: AllocationID, report_version: int) -> None:
        """The executor accepted the allocation: the request is done."""
        request = self.requests.pop(allocation_id, None)
        slot = self._slot_of(allocation_id)
        if slot is not None and slot.resource_id in self.workers:
            worker = self.workers[slot.resource_id]
            worker.min_report_version = max(worker.min_report_version, report_version)
        if slot is not None and slot.state is SlotState.PENDING:
            slot.transition(SlotState.ALLOCATED)
        if request is None and slot is not None:
            log.debug("allocation %s confirmed after its request was cancelled", allocation_id)

    def allocation_refused(self, allocation_id: AllocationID, cause: str) -> None:
        """The executor could not allocate (busy, gone): try elsewhere."""
        slot = self._slot_of(allocation_id)
        refused = None
        if slot is not None and slot.state is SlotState.PENDING:
            slot.transition(SlotState.FREE)
            slot.assign(AllocationID(""), JobID(""))
            refused = (slot.resource_id, slot.index)
        request = self.requests.get(allocation_id)
        if request is not None and request.state is RequestState.PENDING:
            log.info("allocation %s refused (%s); retrying elsewhere", allocation_id[:8], cause)
            request.transition(RequestState.WAITING)
            self._try_fulfill(request, avoid=refused)

    # --- executors -------------------------------------------------------------------
    def register_worker(self, resource_id: ResourceID, slot_profile: ResourceSpec, num_slots: int,
                        reported: list[tuple[int, AllocationID, JobID]], version: int = 0,
                        host: str = "") -> None:
        pending = self.pending_workers.pop(resource_id, None)
        spec = pending.spec if pending else self.worker_spec_for(slot_profile)
        slots = [TaskManagerSlot(resource_id, i, slot_profile, on_change=self._index.slot_changed)
                 for i in range(num_slots)]
        self.workers[resource_id] = Worker(resource_id, spec, slots,
                                           idle_since=self._clock.monotonic(), host=host)
        self._index.executor_changed(resource_id)
        self.report_slot_status(resource_id, reported, holds_partitions=False, version=version)
        for allocation_id in list(pending.reserved if pending else ()):
            request = self.requests.get(allocation_id)
            if request is not None and request.state is RequestState.WAITING_FOR_WORKER:
                request.transition(RequestState.WAITING)
        self.match_waiting_requests()

    def report_slot_status(self, resource_id: ResourceID, reported: list[tuple[int, AllocationID, JobID]],
                           holds_partitions: bool, version: int = 0) -> None:
        """``reported``: (slot index, allocation id or '', job id) — the executor's truth,
        unless it was sent before an allocation we already saw confirmed."""
        worker = self.workers.get(resource_id)
        if worker is None:
            return
        worker.holds_partitions = holds_partitions
        if version < worker.min_report_version:
            return
        worker.min_report_version = version
        freed = False
        for index, allocation_id, job_id in reported:
            slot = worker.slots[index]
            if allocation_id:
                if slot.state is not SlotState.ALLOCATED or slot.allocation_id != allocation_id:
                    slot.transition(SlotState.ALLOCATED)
                    slot.assign(allocation_id, job_id)
                    self.requests.pop(allocation_id, None)
            elif slot.state is SlotState.ALLOCATED:
                slot.transition(SlotState.FREE)
                slot.assign(AllocationID(""), JobID(""))
                freed = True
        self._touch(resource_id)
        if freed:
            self.match_waiting_requests()

    def free_slot(self, resource_id: ResourceID, slot_index: int, allocation_id: AllocationID) -> None:
        worker = self.workers.get(resource_id)
        if worker is None or slot_index >= len(worker.slots):
            return
        slot = worker.slots[slot_index]
        if slot.allocation_id == allocation_id and slot.state is not SlotState.FREE:
            slot.transition(SlotState.FREE)
            slot.assign(AllocationID(""), JobID(""))
            self._touch(resource_id)
            self.match_waiting_requests()

    def unregister_worker(self, resource_id: ResourceID) -> Worker | None:
        """The executor is gone; requests that were placed on it are placed anew."""
        self.pending_workers.pop(resource_id, None)
        worker = self.workers.pop(resource_id, None)
        if worker is not None:
            self._index.forget(worker)
        if worker is not None and worker.spec is not None and worker.busy_slots():
            self._owed.append((resource_id, worker.spec, self._clock.monotonic()))
        for request in self.requests.values():
            if (request.assigned and request.assigned[0] == resource_id) or \
                    request.worker == resource_id:
                request.transition(RequestState.WAITING)
        self.match_waiting_requests()
        return worker

    def worker_start_failed(self, resource_id: ResourceID, cause: str, give_up: bool) -> None:
        pending = self.pending_workers.pop(resource_id, None)
        if pending is None:
            return
        for allocation_id in pending.reserved:
            request = self.requests.get(allocation_id)
            if request is None:
                continue
            request.transition(RequestState.WAITING)
            if give_up:
                del self.requests[allocation_id]
                self._actions.notify_allocation_failure(request, cause)

    def worker_moved(self, resource_id: ResourceID, new_resource_id: ResourceID) -> None:
        """A starting worker is now known by another id (asked again anywhere after its
        host did not take it): its reservations follow it. A worker that registered in
        the meantime is not starting any more, and a lost one is someone else's news."""
        pending = self.pending_workers.pop(resource_id, None)
        if pending is None:
            return
        pending.resource_id, pending.host = new_resource_id, ""
        self.pending_workers[new_resource_id] = pending
        for request in self.requests.values():
            if request.worker == resource_id:
                request.worker = new_resource_id

    def match_waiting_requests(self) -> None:
        """Place every WAITING request. One reserved on a starting worker keeps its
        reservation, unless it prefers no host and a running worker of that worker's
        spec has a free slot: one started for a request since withdrawn (its subtask
        restarted), which would otherwise idle while the worker started for this one
        may take minutes yet (a host lost under it, a slow localization) and the job's
        slot.request.timeout runs out. The worker it leaves serves the next request, or
        idles away (resourcemanager.taskmanager-timeout), as Flink's pending
        TaskManagers do. One that prefers a host waits for the worker asked there."""
        free: dict[WorkerSpec, list[TaskManagerSlot]] | None = None
        for request in list(self.requests.values()):
            if request.state is RequestState.WAITING:
                self._try_fulfill(request)
            elif request.state is RequestState.WAITING_FOR_WORKER and not request.preferred_hosts:
                free = self._free_slots_by_spec() if free is None else free
                slot = self._free_slot_like_its_worker(request, free)
                if slot is not None:
                    self._assign(request, slot)

    # --- idleness --------------------------------------------------------------------
    def _touch(self, resource_id: ResourceID) -> None:
        worker = self.workers.get(resource_id)
        if worker is None:
            return
        if worker.busy_slots() or worker.holds_partitions:
            worker.idle_since = None
        elif worker.idle_since is None:
            worker.idle_since = self._clock.monotonic()

    def idle_workers(self, keep: int = 0) -> list[ResourceID]:
        """Executors idle past resourcemanager.taskmanager-timeout (beyond ``keep`` warm
        ones). A session keeps executors of its smallest container size warm
        (``warm_spec``): a larger one a job left idle goes, and a warm one takes its
        place (``warm_missing``), so ``--min-executors`` never holds a host's room in
        containers sized for a job that ended (issue 81: two idle 6-core executors
        kept as warm ones left the next job's 1-core containers no room)."""
        now = self._clock.monotonic()
        idle = [w for w in self.workers.values()
                if w.idle_since is not None and now - w.idle_since >= self._taskmanager_timeout]
        idle.sort(key=lambda w: w.idle_since or 0.0)
        warm = self.warm_spec
        if warm is not None:
            idle.sort(key=lambda w: w.spec != warm)       # warm-sized ones are kept first
        busy_or_young = len(self.workers) - len(idle)
        spare = max(0, keep - busy_or_young)
        kept = [w for w in idle[:spare] if warm is None or w.spec == warm]
        return [w.resource_id for w in idle if w not in kept]

    @property
    def warm_spec(self) -> WorkerSpec | None:
        """The size of the executors a session keeps warm: its smallest container."""
        return self.ladder.specs[0] if self.ladder is not None and self.ladder.specs else None

    def warm_missing(self, keep: int) -> int:
        """Warm executors to start so that ``keep`` run or start."""
        return max(0, keep - len(self.workers) - len(self.pending_workers))

    def _slot_of(self, allocation_id: AllocationID) -> TaskManagerSlot | None:
        return self._index.slot_of(allocation_id)

    def jobs_on(self, resource_id: ResourceID) -> set[JobID]:
        worker = self.workers.get(resource_id)
        return {s.job_id for s in worker.slots if s.job_id} if worker else set()
