"""The ResourceManager's slot manager, driven by hand with a manual clock."""
from __future__ import annotations

import pytest

from yarnflow.appmaster.resourcemanager.slotmanager import (PendingSlotRequest, RequestState,
                                                            SlotManager, SlotState)
from yarnflow.core.clock import ManualClock
from yarnflow.core.resources import ResourceSpec as R
from yarnflow.core.status import IllegalStateTransition
from yarnflow.core.worker_spec import WorkerSpec

SMALL, BIG = R(1, 1024), R(4, 8192)
TIMEOUT = 30.0


class Actions:
    """The ResourceManager as the slot manager sees it: records what it was asked."""

    def __init__(self) -> None:
        self.started: list[tuple[str, WorkerSpec]] = []
        self.hosts: dict[str, tuple[str, ...]] = {}     # resource id -> hosts it was asked on
        self.stopped: list[str] = []
        self.allocations: list[tuple[str, int, str]] = []
        self.failures: list[tuple[str, str]] = []

    def start_worker(self, spec: WorkerSpec, hosts: tuple[str, ...] = ()) -> str:
        resource_id = f"worker-{len(self.started)}"
        self.started.append((resource_id, spec))
        self.hosts[resource_id] = hosts
        return resource_id

    def stop_worker(self, resource_id: str, reason: str) -> None:
        self.stopped.append(resource_id)

    def allocate_slot(self, resource_id: str, slot_index: int, request: PendingSlotRequest) -> None:
        self.allocations.append((resource_id, slot_index, request.allocation_id))

    def notify_allocation_failure(self, request: PendingSlotRequest, cause: str) -> None:
        self.failures.append((request.allocation_id, cause))


def request(allocation_id: str, profile: R = SMALL, job: str = "job-1",
            hosts: tuple[str, ...] = ()) -> PendingSlotRequest:
    return PendingSlotRequest(allocation_id, job, "jm-1", "jm:1", profile, hosts)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def actions() -> Actions:
    return Actions()


def manager(actions: Actions, clock: ManualClock, slots: int = 1, max_workers: int = 8
            ) -> SlotManager:
    return SlotManager(actions, slots, 256, max_workers, TIMEOUT, clock=clock)


def register(sm: SlotManager, resource_id: str, profile: R = SMALL, slots: int = 1,
             reported: list[tuple[int, str, str]] | None = None, version: int = 0) -> None:
    sm.register_worker(resource_id, profile, slots,
                       reported if reported is not None else [(i, "", "") for i in range(slots)],
                       version)


def test_a_request_with_no_free_slot_starts_a_worker_of_its_profile(actions, clock):
    sm = manager(actions, clock)
    sm.request_slot(request("a1", BIG))
    assert [spec.slot_profile for _, spec in actions.started] == [BIG]
    assert sm.requests["a1"].state is RequestState.WAITING_FOR_WORKER
    register(sm, "worker-0", BIG)
    assert actions.allocations == [("worker-0", 0, "a1")]
    assert sm.requests["a1"].state is RequestState.PENDING
    sm.allocation_confirmed("a1", report_version=1)
    assert "a1" not in sm.requests
    assert sm.workers["worker-0"].slots[0].state is SlotState.ALLOCATED


def test_a_request_goes_to_a_free_slot_that_fits_without_starting_anything(actions, clock):
    sm = manager(actions, clock)
    register(sm, "small", SMALL)
    register(sm, "big", BIG)
    sm.request_slot(request("a1", BIG))
    assert actions.started == []
    assert actions.allocations == [("big", 0, "a1")]


def test_requests_share_a_starting_worker_up_to_its_slots(actions, clock):
    sm = manager(actions, clock, slots=2)
    for allocation_id in ("a1", "a2", "a3"):
        sm.request_slot(request(allocation_id))
    assert len(actions.started) == 2          # a1 and a2 wait for worker-0, a3 for worker-1
    assert sm.requests["a2"].worker == "worker-0" and sm.requests["a3"].worker == "worker-1"


def test_a_request_is_idempotent_per_allocation_id(actions, clock):
    sm = manager(actions, clock)
    sm.request_slot(request("a1"))
    sm.request_slot(request("a1"))
    assert len(actions.started) == 1
    register(sm, "worker-0")
    sm.allocation_confirmed("a1", 1)
    sm.request_slot(request("a1"))            # already allocated: still nothing new
    assert len(actions.started) == 1 and len(actions.allocations) == 1


def test_the_executors_report_is_the_truth(actions, clock):
    sm = manager(actions, clock)
    register(sm, "w", slots=2)
    # the executor says slot 1 belongs to an allocation the slot manager never saw
    sm.report_slot_status("w", [(0, "", ""), (1, "other", "job-2")], False, version=1)
    assert sm.workers["w"].slots[1].state is SlotState.ALLOCATED
    assert sm.jobs_on("w") == {"job-2"}
    # and later that it is free again: the slot is free, and a waiting request takes it
    sm.request_slot(request("a1"))
    sm.request_slot(request("a2"))                 # nothing free: a worker starts for it
    assert [a[2] for a in actions.allocations] == ["a1"] and len(actions.started) == 1
    sm.allocation_confirmed("a1", 2)
    sm.report_slot_status("w", [(0, "a1", "job-1"), (1, "", "")], False, version=3)
    assert actions.allocations[-1] == ("w", 1, "a2"), "a2, waiting for its worker, takes it"
    sm.request_slot(request("a3"))                 # a new request: the worker a2 left
    assert sm.requests["a3"].state is RequestState.WAITING_FOR_WORKER
    assert len(actions.started) == 1


def test_a_report_older_than_a_confirmed_allocation_is_ignored(actions, clock):
    sm = manager(actions, clock)
    register(sm, "w")
    sm.request_slot(request("a1"))
    sm.allocation_confirmed("a1", report_version=5)
    sm.report_slot_status("w", [(0, "", "")], False, version=4)    # sent before the allocation
    assert sm.workers["w"].slots[0].state is SlotState.ALLOCATED


def test_a_refused_allocation_is_placed_again(actions, clock):
    sm = manager(actions, clock)
    register(sm, "w1")
    register(sm, "w2")
    sm.request_slot(request("a1"))
    first = actions.allocations[-1][0]
    sm.allocation_refused("a1", "slot busy")
    assert sm.requests["a1"].state is RequestState.PENDING
    assert actions.allocations[-1][0] != first     # not straight back to the refusing slot
    sm.allocation_refused("a1", "slot busy")       # the other refuses too: back to the first,
    assert actions.allocations[-1][0] == first     # never a new worker while slots are free
    assert actions.started == []


def test_a_request_waiting_for_its_worker_takes_a_free_slot_of_its_profile_that_turns_up(
        actions, clock):
    """The lost-host case: a1's worker was started for a request since withdrawn (its
    subtask restarted), a2's worker is stuck starting on a slow host. When a1's worker
    registers with nothing to do, a2 takes its slot instead of waiting (up to
    slot.request.timeout) for its own; a worker of another spec is not taken."""
    sm = manager(actions, clock)
    sm.request_slot(request("a1"))
    sm.request_slot(request("a2"))
    sm.request_slot(request("b1", BIG))
    sm.request_slot(request("h1", hosts=("h",)))     # a source's first attempt: its host
    assert [w for w, _ in actions.started] == ["worker-0", "worker-1", "worker-2", "worker-3"]
    sm.cancel_slot_request("a1")
    register(sm, "worker-0")
    assert actions.allocations == [("worker-0", 0, "a2")]
    assert sm.requests["h1"].state is RequestState.WAITING_FOR_WORKER, "it waits for host h"
    assert sm.requests["a2"].state is RequestState.PENDING
    assert sm.requests["b1"].state is RequestState.WAITING_FOR_WORKER, "SMALL is not BIG"
    assert sm.pending_workers["worker-1"].reserved == set(), "worker-1 serves what comes next"


def test_a_lost_worker_puts_its_requests_back_to_waiting(actions, clock):
    sm = manager(actions, clock, max_workers=1)
    sm.request_slot(request("a1"))
    sm.unregister_worker("worker-0")                # it died before registering
    # max-workers is 1 and nothing is running or starting: the request starts a new one
    assert len(actions.started) == 2
    assert sm.requests["a1"].state is RequestState.WAITING_FOR_WORKER


def test_a_lost_busy_worker_is_replaced_by_one_of_its_own_spec_when_a_request_needs_it(
        actions, clock):
    """FLIP-6: a replacement of the same spec. A small request ran on a big warm worker;
    when that worker is lost, the request that follows gets a big worker again, not
    the smallest that fits; only once, and only for a request that fits in it."""
    sm = manager(actions, clock)
    register(sm, "big", BIG)
    sm.request_slot(request("a1", SMALL))
    sm.allocation_confirmed("a1", 1)
    sm.unregister_worker("big")
    assert actions.started == [], "nothing asked for a slot yet"
    sm.request_slot(request("a2", SMALL))
    assert [spec.slot_profile for _, spec in actions.started] == [BIG]
    sm.request_slot(request("a3", SMALL))
    assert [spec.slot_profile for _, spec in actions.started] == [BIG, SMALL], "owed once"


def test_a_lost_idle_worker_is_owed_nothing_and_an_old_debt_expires(actions, clock):
    sm = manager(actions, clock)
    register(sm, "idle", BIG)
    sm.unregister_worker("idle")
    sm.request_slot(request("a1", SMALL))
    assert [spec.slot_profile for _, spec in actions.started] == [SMALL]
    register(sm, "busy", BIG)
    sm.request_slot(request("a2", SMALL))
    sm.allocation_confirmed("a2", 1)
    sm.unregister_worker("busy")
    clock.advance(301)                               # past REPLACEMENT_WINDOW_S
    sm.request_slot(request("a3", SMALL))
    assert [spec.slot_profile for _, spec in actions.started] == [SMALL, SMALL]


def test_at_max_workers_a_request_waits_for_a_free_slot(actions, clock):
    sm = manager(actions, clock, max_workers=1)
    register(sm, "w")
    sm.request_slot(request("a1"))
    sm.allocation_confirmed("a1", 1)
    sm.request_slot(request("a2"))
    assert actions.started == [] and sm.requests["a2"].state is RequestState.WAITING
    sm.free_slot("w", 0, "a1")
    assert actions.allocations[-1] == ("w", 0, "a2")


def test_workers_idle_past_the_taskmanager_timeout_are_released(actions, clock):
    sm = manager(actions, clock)
    register(sm, "busy")
    register(sm, "idle")
    sm.request_slot(request("a1"))
    busy = actions.allocations[-1][0]
    sm.allocation_confirmed("a1", 1)
    idle = ({"busy", "idle"} - {busy}).pop()
    clock.advance(TIMEOUT - 1)
    assert sm.idle_workers() == []
    clock.advance(1)
    assert sm.idle_workers() == [idle]
    assert sm.idle_workers(keep=2) == []            # session min-executors stay warm
    sm.free_slot(busy, 0, "a1")                     # idle from now, not from registration
    clock.advance(TIMEOUT - 1)
    assert busy not in sm.idle_workers()


def test_a_worker_holding_partitions_is_not_idle(actions, clock):
    sm = manager(actions, clock)
    register(sm, "w")
    sm.report_slot_status("w", [(0, "", "")], holds_partitions=True, version=1)
    clock.advance(TIMEOUT * 2)
    assert sm.idle_workers() == []


def test_failed_starts_fail_the_requests_only_when_giving_up(actions, clock):
    sm = manager(actions, clock)
    sm.request_slot(request("a1"))
    sm.worker_start_failed("worker-0", "container exited 1", give_up=False)
    assert actions.failures == [] and sm.requests["a1"].state is RequestState.WAITING
    sm.match_waiting_requests()
    sm.worker_start_failed("worker-1", "container exited 1", give_up=True)
    assert actions.failures == [("a1", "container exited 1")] and "a1" not in sm.requests


def test_a_transition_the_table_does_not_allow_raises(actions, clock):
    sm = manager(actions, clock)
    sm.request_slot(request("a1"))
    with pytest.raises(IllegalStateTransition, match="WAITING_FOR_WORKER -> WAITING_FOR_WORKER"):
        sm.requests["a1"].transition(RequestState.WAITING_FOR_WORKER)
    register(sm, "worker-0")                       # a1 is now PENDING on its slot
    with pytest.raises(IllegalStateTransition, match="PENDING -> PENDING"):
        sm.workers["worker-0"].slots[0].transition(SlotState.PENDING)
    with pytest.raises(IllegalStateTransition, match="PENDING -> WAITING_FOR_WORKER"):
        sm.requests["a1"].transition(RequestState.WAITING_FOR_WORKER)


# --- locality: asked for, never waited for ----------------------------------------------
def test_a_worker_started_for_a_request_is_asked_on_its_preferred_hosts(actions, clock):
    sm = manager(actions, clock)
    sm.request_slot(request("a", hosts=("nm2", "nm1")))
    sm.request_slot(request("b"))
    assert actions.hosts == {"worker-0": ("nm2", "nm1"), "worker-1": ()}


def test_a_request_joins_a_starting_worker_on_its_host_before_another(actions, clock):
    sm = manager(actions, clock, slots=2)
    sm.request_slot(request("a", hosts=("nm1",)))
    sm.request_slot(request("b", hosts=("nm2",)))     # worker-0 has room, but on nm1
    assert [r for r, _ in actions.started] == ["worker-0"], "room on a starting worker is used"
    sm.request_slot(request("c", hosts=("nm2",)))
    sm.request_slot(request("d", hosts=("nm1",)))
    # b took worker-0's second place (no worker was starting on nm2); c starts one there;
    # d finds worker-0 full and joins the nm2 worker rather than start a third
    assert [r for r, _ in actions.started] == ["worker-0", "worker-1"]
    assert actions.hosts["worker-1"] == ("nm2",)
    assert sm.requests["c"].worker == "worker-1" and sm.requests["d"].worker == "worker-1"


def test_a_request_prefers_the_starting_worker_on_its_own_host(actions, clock):
    sm = manager(actions, clock, slots=2)
    sm.request_slot(request("a", hosts=("nm1",)))
    sm.request_slot(request("b", hosts=("nm2",)))
    sm.request_slot(request("c", hosts=("nm3",)))    # both full-ish: worker-0 full, starts worker-1
    sm.request_slot(request("d", hosts=("nm3",)))
    assert sm.requests["d"].worker == sm.requests["c"].worker == "worker-1"
    assert actions.hosts["worker-1"] == ("nm3",)


def test_a_starting_worker_asked_again_elsewhere_keeps_its_reservations(actions, clock):
    sm = manager(actions, clock, slots=2)
    sm.request_slot(request("a", hosts=("nm1",)))
    sm.request_slot(request("b", hosts=("nm1",)))
    sm.worker_moved("worker-0", "worker-0-anywhere")
    assert set(sm.pending_workers) == {"worker-0-anywhere"}
    assert sm.pending_workers["worker-0-anywhere"].host == ""
    assert sm.requests["a"].worker == sm.requests["b"].worker == "worker-0-anywhere"
    register(sm, "worker-0-anywhere", slots=2)
    assert sorted(a for _, _, a in actions.allocations) == ["a", "b"]
    assert [r for r, _ in actions.started] == ["worker-0"], "no worker started for the move"
    sm.worker_moved("worker-0", "late")              # already moved: nothing happens
    assert "late" not in sm.pending_workers
