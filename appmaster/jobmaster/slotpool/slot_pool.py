"""The SlotPool of one JobMaster (seed 001/002).

It serves a request from a slot it already holds when one fits, and otherwise asks
the ResourceManager for a new allocation and waits for a TaskExecutor to offer it.
A slot the job no longer uses is kept for ``slot.idle.timeout`` (the next stage or a
restart may want it) and then given back to its executor. Every method runs on the
JobMaster's main thread.
"""
from __future__ import annotations

import enum
import heapq
import itertools
import logging
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

from yarnflow.core.ids import AllocationID, JobID, ResourceID
from yarnflow.appmaster.resourcemanager.gateway import ResourceManagerGateway
from yarnflow.appmaster.jobmaster.slotpool.ahead import SlotsAhead
from yarnflow.appmaster.jobmaster.slotpool.selection import SlotPreferences, select_slot
from yarnflow.appmaster.jobmaster.slotpool.slots import PhysicalSlot, TaskExecutorLocation
from yarnflow.core.messages import SlotOffer
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import check_transition
from yarnflow.core.errors import Refused
from yarnflow.rpc.endpoint import MainThreadExecutor, ScheduledTask, describe_rpc_error

log = logging.getLogger(__name__)


class NoResourceAvailableError(Exception):
    """No slot could be had for a request: the message says which and why."""


@dataclass(eq=False)
class PendingRequest:
    allocation_id: AllocationID
    profile: ResourceSpec
    future: "Future[PhysicalSlot]"
    hosts: tuple[str, ...] = ()    # where a worker started for it should run, best first
    exact: bool = False            # only a slot of exactly ``profile`` (adaptive sizing)
    timeout: ScheduledTask | None = None
    sent: bool = False
    retry_pause: float = 0.0      # the next pause before asking again after a lost message


def _serves(request: PendingRequest, slot_profile: ResourceSpec) -> bool:
    """Whether a slot of ``slot_profile`` may serve ``request``; a request whose consumer
    cancelled it (its withdrawal still queued on the main thread) serves nothing."""
    if request.future.done():
        return False
    return slot_profile == request.profile if request.exact else request.profile.fits_in(slot_profile)


_FIRST_RETRY_PAUSE = 0.5
_MAX_RETRY_PAUSE = 10.0


class HeldSlotState(enum.Enum):
    """A slot the pool holds: FREE (idle since ``since``, waiting for a request or for
    slot.idle.timeout) or ALLOCATED to a task or a slot-sharing group. A slot leaves the
    pool by being given back, or lost with its executor."""
    FREE = "free"
    ALLOCATED = "allocated"


_HELD_TRANSITIONS = {
    HeldSlotState.FREE: {HeldSlotState.ALLOCATED},
    HeldSlotState.ALLOCATED: {HeldSlotState.FREE},
}


@dataclass
class _Held:
    slot: PhysicalSlot
    since: float                 # when it came into the pool or was last freed
    state: HeldSlotState = HeldSlotState.FREE

    def transition(self, target: HeldSlotState, now: float = 0.0) -> None:
        """``now`` (for FREE) is when the slot's idle time starts."""
        if target not in _HELD_TRANSITIONS[self.state]:   # checked inline: once per request
            check_transition(_HELD_TRANSITIONS, self.state, target,
                             lambda: f"slot {self.slot.allocation_id[:8]}")
        self.state = target
        if target is HeldSlotState.FREE:
            self.since = now


class SlotPool:
    def __init__(self, main: MainThreadExecutor, job_id: JobID, idle_timeout: float,
                 request_timeout: float,
                 on_allocated_slot_lost: Callable[[PhysicalSlot, str], None]) -> None:
        self._main = main
        self.job_id = job_id
        self._idle_timeout = idle_timeout
        self._request_timeout = request_timeout
        self._on_lost = on_allocated_slot_lost
        self._rm: ResourceManagerGateway | None = None
        self._held: dict[AllocationID, _Held] = {}
        self._pending: dict[AllocationID, PendingRequest] = {}
        self._ahead = SlotsAhead()      # asked during a restart's pause, not yet taken
        # slots of each profile the job holds at once, told to the ResourceManager with
        # each request: a worker it starts without a plan gets no more of them
        self.wanted: dict[ResourceSpec, int] = {}
        self._slots_per_executor: dict[str, int] = {}
        self._allocated_per_executor: dict[str, int] = {}
        # Free slots by exact profile and executor, and a lazily updated heap of
        # (utilization, seq, executor) per profile: a request without preferences takes
        # the least-utilized executor in O(log n) instead of scanning every free slot.
        self._free: dict[ResourceSpec, dict[str, dict[str, PhysicalSlot]]] = {}
        self._heaps: dict[ResourceSpec, list[tuple[float, int, str]]] = {}
        # the executors with slots here on each host: a request that prefers hosts looks
        # at their executors' free slots only
        self._executors_on_host: dict[str, set[str]] = {}
        self._seq = itertools.count()
        # the job's blocklist's view: a slot on a blocked host goes back once free
        self.is_blocked: Callable[[str], bool] = lambda host: False
        self._closed = False
        self._idle_check = main.schedule_periodic(max(0.05, idle_timeout / 4), self.check_idle_slots)

    # --- the ResourceManager ---------------------------------------------------------
    def connect_resource_manager(self, rm: ResourceManagerGateway) -> None:
        self._rm = rm
        for request in self._pending.values():
            if not request.sent:
                self._send_request(request)

    # --- requests --------------------------------------------------------------------
    def allocate_available(self, profile: ResourceSpec,
                           preferences: SlotPreferences = SlotPreferences(),
                           exact: bool = False) -> PhysicalSlot | None:
        """A free slot the pool holds, allocated at once; None when none fits. A warm
        pool serves most requests this way, and the scheduler then needs no Future per
        subtask (20,000 of them were a third of assigning 10,000 slots). ``exact``: of
        ``profile`` itself, never a larger one."""
        if self._closed:
            return None
        free = self._least_utilized(profile) if exact else self._select(profile, preferences)
        if free is not None:
            self._mark_allocated(free)
        return free

    def allocate_available_elsewhere(self, profile: ResourceSpec, avoid: frozenset[str],
                                     prefer: frozenset[str] = frozenset()) -> PhysicalSlot | None:
        """A free slot that fits, on a host not in ``avoid``: on a host in ``prefer``
        first, then the least-utilized executor's: a speculative attempt's, rare enough
        to look at every free slot."""
        if self._closed:
            return None
        fitting = [slot for size, by_executor in self._free.items() if profile.fits_in(size)
                   for slots in by_executor.values() for slot in slots.values()
                   if slot.location.host not in avoid and not self.is_blocked(slot.location.host)]
        if not fitting:
            return None
        free = min(fitting, key=lambda s: (s.location.host not in prefer,
                                           self._executor_utilization(s.location.resource_id)))
        self._mark_allocated(free)
        return free

    def request_ahead(self, profile: ResourceSpec, exact: bool = False) -> None:
        """Ask now for a slot a request will want shortly (``ahead.py``)."""
        self._ahead.add(profile, exact, self._request(profile, SlotPreferences(), exact),
                        self._main.execute,
                        lambda slot: self.release_slot(slot.allocation_id))

    def request_new_slot(self, profile: ResourceSpec,
                         preferences: SlotPreferences = SlotPreferences(),
                         exact: bool = False) -> "Future[PhysicalSlot]":
        """A slot the pool does not hold yet: asked of the ResourceManager, done when an
        executor offers it (or one asked for ahead, ``request_ahead``)."""
        ahead = self._ahead.take(profile, exact) if self._ahead else None
        return ahead if ahead is not None else self._request(profile, preferences, exact)

    def _request(self, profile: ResourceSpec, preferences: SlotPreferences,
                 exact: bool) -> "Future[PhysicalSlot]":
        future: Future[PhysicalSlot] = Future()
        if self._closed:
            future.set_exception(NoResourceAvailableError("the SlotPool is closed: the job ended"))
            return future
        request = PendingRequest(AllocationID(uuid.uuid4().hex), profile, future,
                                 preferences.ranked_hosts(), exact)
        request.timeout = self._main.schedule(self._request_timeout, self._timeout_request,
                                              request.allocation_id)
        self._pending[request.allocation_id] = request
        if self._rm is not None:
            self._send_request(request)

        def withdrawn(fut: "Future[PhysicalSlot]") -> None:
            if fut.cancelled():
                self._main.execute(self._withdraw, request.allocation_id)
        future.add_done_callback(withdrawn)
        return future

    def _withdraw(self, allocation_id: AllocationID) -> None:
        """Its consumer no longer wants a requested slot (its subtasks were cancelled):
        forget the request and tell the ResourceManager, so no container starts for it."""
        if allocation_id not in self._pending:
            return
        self._fail_pending(allocation_id, "withdrawn")   # its future is cancelled already
        if self._rm is not None:
            self._rm.cancel_slot_request(allocation_id)

    def _send_request(self, request: PendingRequest) -> None:
        assert self._rm is not None
        request.sent = True
        reply = self._rm.request_slot(request.allocation_id, request.profile, request.hosts,
                                      request.exact, self.wanted.get(request.profile, 0))

        def failed(err: Exception) -> None:
            if isinstance(err, Refused):
                self._fail_pending(request.allocation_id,
                                   f"the ResourceManager refused the slot request: {err}")
                return
            # The request or its answer was lost (FLIP-6's messages 4 and 6): ask again
            # under the same AllocationID, which the ResourceManager serves once however
            # often it hears it, until it answers or slot.request.timeout ends the wait.
            request.retry_pause = min(max(request.retry_pause * 2, _FIRST_RETRY_PAUSE),
                                      _MAX_RETRY_PAUSE)
            log.info("slot request %s got no answer (%s): asking again in %.1f s",
                     request.allocation_id[:8], describe_rpc_error(err), request.retry_pause)
            self._main.schedule(request.retry_pause, self._resend, request)

        def done(fut: Future[Any]) -> None:
            if fut.exception() is not None:
                self._main.execute(failed, fut.exception())
        reply.add_done_callback(done)

    def _resend(self, request: PendingRequest) -> None:
        if self._pending.get(request.allocation_id) is request and self._rm is not None \
                and not self._closed:
            self._send_request(request)

    def _timeout_request(self, allocation_id: AllocationID) -> None:
        request = self._pending.get(allocation_id)
        if request is None:
            return
        self._fail_pending(allocation_id, (
            f"no slot of profile {request.profile} arrived within slot.request.timeout "
            f"({self._request_timeout:g} s). The cluster may lack capacity for this profile "
            f"or TaskExecutors fail to start; check the ResourceManager log, lower the "
            f"operators' ResourceSpec or parallelism, or raise slot.request.timeout"))
        if self._rm is not None:
            self._rm.cancel_slot_request(allocation_id)

    def _fail_pending(self, allocation_id: AllocationID, cause: str) -> None:
        request = self._pending.pop(allocation_id, None)
        if request is None:
            return
        if request.timeout:
            request.timeout.cancel()
        if not request.future.done():
            request.future.set_exception(NoResourceAvailableError(cause))

    def fail_allocation(self, allocation_id: AllocationID, cause: str) -> None:
        """The ResourceManager or an executor reports an allocation cannot be served."""
        if allocation_id in self._pending:
            self._fail_pending(allocation_id, cause)
            return
        held = self._held.pop(allocation_id, None)
        if held is not None:
            self._forget_slot(held)
            if held.state is HeldSlotState.ALLOCATED:
                self._on_lost(held.slot, cause)

    # --- offers from TaskExecutors ----------------------------------------------------
    def offer_slots(self, location: TaskExecutorLocation, gateway: Any,
                    offers: list[SlotOffer]) -> list[str]:
        """Accept offered slots; returns the accepted allocation ids."""
        accepted: list[str] = []
        if self._closed:
            return accepted
        for offer in offers:
            held = self._held.get(offer.allocation_id)
            if held is not None:
                # A repeated offer (its answer was lost, or it arrived twice) is known by
                # (AllocationID, ResourceID) and accepted again, once; the same id from
                # another executor is not ours.
                if held.slot.location.resource_id == location.resource_id:
                    accepted.append(offer.allocation_id)
                continue
            slot = PhysicalSlot(offer.allocation_id, location, offer.slot_index, offer.profile,
                                gateway, offer.worker_spec)
            request = self._pending.pop(offer.allocation_id, None)
            if request is None:   # offered for another request of ours: serve any that fits
                request = next((r for r in self._pending.values()
                                if _serves(r, offer.profile)), None)
                if request is not None:
                    del self._pending[request.allocation_id]
                    if self._rm is not None:
                        self._rm.cancel_slot_request(request.allocation_id)
            self._add_slot(slot)
            accepted.append(offer.allocation_id)
            if request is not None and not request.future.done():
                if request.timeout:
                    request.timeout.cancel()
                self._mark_allocated(slot)
                request.future.set_result(slot)
        # the executor's utilization changed with each slot added: keyed once, not per slot
        for profile in {offer.profile for offer in offers}:
            self._push(profile, location.resource_id)
        return accepted

    def _add_slot(self, slot: PhysicalSlot) -> None:
        """Its executor is re-keyed in the heaps by ``offer_slots``, once per offer."""
        self._held[slot.allocation_id] = _Held(slot, self._main.clock.monotonic())
        rid = slot.location.resource_id
        self._slots_per_executor[rid] = self._slots_per_executor.get(rid, 0) + 1
        self._executors_on_host.setdefault(slot.location.host, set()).add(rid)
        self._index_free(slot, rekey=False)

    def _forget_slot(self, held: _Held) -> None:
        rid = held.slot.location.resource_id
        self._slots_per_executor[rid] -= 1
        if not self._slots_per_executor[rid]:
            self._executors_on_host.get(held.slot.location.host, set()).discard(rid)
        if held.state is HeldSlotState.ALLOCATED:
            self._allocated_per_executor[rid] -= 1
        else:
            self._unindex_free(held.slot)

    def _mark_allocated(self, slot: PhysicalSlot) -> None:
        self._held[slot.allocation_id].transition(HeldSlotState.ALLOCATED)
        rid = slot.location.resource_id
        self._allocated_per_executor[rid] = self._allocated_per_executor.get(rid, 0) + 1
        self._unindex_free(slot)

    def _index_free(self, slot: PhysicalSlot, rekey: bool = True) -> None:
        rid = slot.location.resource_id
        self._free.setdefault(slot.profile, {}).setdefault(rid, {})[slot.allocation_id] = slot
        if rekey:
            self._push(slot.profile, rid)

    def _unindex_free(self, slot: PhysicalSlot) -> None:
        by_executor = self._free.get(slot.profile, {})
        slots = by_executor.get(slot.location.resource_id)
        if slots is not None:
            slots.pop(slot.allocation_id, None)
            if not slots:
                del by_executor[slot.location.resource_id]
        self._push(slot.profile, slot.location.resource_id)

    def _push(self, profile: ResourceSpec, rid: str) -> None:
        """Re-key ``rid`` in every profile's heap where it has free slots (its utilization
        just changed, which made its older entries stale). Where its entry is on top, as
        after a request took the least-utilized executor's slot (nearly every request of
        a large job), that entry is replaced in place rather than left to be popped."""
        utilization = self._executor_utilization(rid)
        for other, by_executor in self._free.items():
            if rid in by_executor or other == profile:
                heap = self._heaps.setdefault(other, [])
                entry = (utilization, next(self._seq), rid)
                if heap and heap[0][2] == rid:
                    heapq.heapreplace(heap, entry)
                else:
                    heapq.heappush(heap, entry)

    def _least_utilized(self, profile: ResourceSpec) -> PhysicalSlot | None:
        heap = self._heaps.get(profile)
        by_executor = self._free.get(profile, {})
        while heap:
            utilization, _, rid = heap[0]
            if rid not in by_executor or utilization != self._executor_utilization(rid):
                heapq.heappop(heap)          # stale entry
                continue
            return next(iter(by_executor[rid].values()))
        return None

    def _executor_utilization(self, rid: str) -> float:
        total = self._slots_per_executor.get(rid, 0)
        return self._allocated_per_executor.get(rid, 0) / total if total else 1.0

    def _select(self, profile: ResourceSpec, preferences: SlotPreferences) -> PhysicalSlot | None:
        """``select_slot``'s choice among the free slots, through the indexes: a prior
        allocation by its id, the preferred executors' and hosts' slots by executor, and
        otherwise the least-utilized executor from the heaps. No request scans every
        slot (10,000 requests would make that quadratic)."""
        if preferences.empty:
            return self._least_utilized(profile) or self._least_utilized_fitting(profile)
        for allocation_id in preferences.prior_allocations:
            held = self._held.get(AllocationID(allocation_id))
            if held is not None and held.state is HeldSlotState.FREE \
                    and profile.fits_in(held.slot.profile):
                return held.slot
        executors = set(preferences.resource_ids)
        for host in set(preferences.hosts):
            executors |= self._executors_on_host.get(host, set())
        # an executor's free slots of one profile score alike: one of them stands for all
        candidates = [next(iter(slots.values())) for fitting, by_executor in self._free.items()
                      if profile.fits_in(fitting) for rid in executors
                      if (slots := by_executor.get(rid))]
        if candidates:       # every one scores above a slot elsewhere
            return select_slot(candidates, profile, preferences,
                               {rid: self._executor_utilization(rid) for rid in executors})
        return self._least_utilized_fitting(profile)

    def _least_utilized_fitting(self, profile: ResourceSpec) -> PhysicalSlot | None:
        """The free slot of any profile that fits on the least-utilized executor, an exact
        profile first among equals (``select_slot``'s order for slots it scores 0)."""
        best: PhysicalSlot | None = None
        best_key: tuple[float, int] | None = None
        for fitting in self._free:
            if not profile.fits_in(fitting):
                continue
            slot = self._least_utilized(fitting)
            if slot is None:
                continue
            key = (self._executor_utilization(slot.location.resource_id), 0 if fitting == profile else 1)
            if best_key is None or key < best_key:
                best, best_key = slot, key
        return best

    # --- returning slots -------------------------------------------------------------
    def release_slot(self, allocation_id: AllocationID) -> None:
        """The job is done with a slot: serve a waiting request with it, or keep it idle."""
        held = self._held.get(allocation_id)
        if held is None or held.state is HeldSlotState.FREE:
            return
        held.transition(HeldSlotState.FREE, self._main.clock.monotonic())
        self._allocated_per_executor[held.slot.location.resource_id] -= 1
        self._index_free(held.slot)
        if self.is_blocked(held.slot.location.host):
            self._give_back(allocation_id, f"host {held.slot.location.host} is blocked")
            return
        request = next((r for r in self._pending.values()
                        if _serves(r, held.slot.profile)), None)
        if request is not None:
            del self._pending[request.allocation_id]
            if request.timeout:
                request.timeout.cancel()
            if self._rm is not None:
                self._rm.cancel_slot_request(request.allocation_id)
            self._mark_allocated(held.slot)
            request.future.set_result(held.slot)

    def release_free_slots_on(self, host: str, cause: str) -> None:
        """Give back the free slots on ``host``: it was just blocked (its other slots go
        back as the job is done with them, while ``is_blocked`` says so)."""
        for allocation_id, held in list(self._held.items()):
            if held.state is HeldSlotState.FREE and held.slot.location.host == host:
                self._give_back(allocation_id, cause)

    def check_idle_slots(self) -> None:
        now = self._main.clock.monotonic()
        for allocation_id, held in list(self._held.items()):
            if held.state is HeldSlotState.FREE and now - held.since >= self._idle_timeout:
                self._give_back(allocation_id, "idle longer than slot.idle.timeout")

    def _give_back(self, allocation_id: AllocationID, cause: str) -> "Future[Any] | None":
        held = self._held.pop(allocation_id)
        self._forget_slot(held)
        if held.slot.gateway is not None:
            freed: Future[Any] = held.slot.gateway.free_slot(allocation_id, cause)
            return freed
        return None

    def release_task_manager(self, resource_id: ResourceID, cause: str) -> list[PhysicalSlot]:
        """An executor is gone: drop its slots and tell the owners of allocated ones."""
        lost: list[PhysicalSlot] = []
        for allocation_id, held in list(self._held.items()):
            if held.slot.location.resource_id == resource_id:
                del self._held[allocation_id]
                self._forget_slot(held)
                if held.state is HeldSlotState.ALLOCATED:
                    lost.append(held.slot)
        self._slots_per_executor.pop(resource_id, None)
        self._allocated_per_executor.pop(resource_id, None)
        for slot in lost:
            self._on_lost(slot, cause)
        return lost

    def close(self, cause: str) -> "list[Future[Any]]":
        """The job ended: fail what is pending, give every slot back.

        Returns the executors' acknowledgements, so the job's end can wait until its
        slots are free again at the ResourceManager: the next job must find them warm."""
        self._closed = True
        self._idle_check.cancel()
        for allocation_id in list(self._pending):
            if self._rm is not None:
                self._rm.cancel_slot_request(allocation_id)
            self._fail_pending(allocation_id, cause)
        freed = (self._give_back(allocation_id, cause) for allocation_id in list(self._held))
        return [f for f in freed if f is not None]

    # --- views -----------------------------------------------------------------------
    def held_slots(self) -> list[PhysicalSlot]:
        return [h.slot for h in self._held.values()]

    def is_idle(self, allocation_id: AllocationID) -> bool:
        held = self._held.get(allocation_id)
        return held is not None and held.state is HeldSlotState.FREE
