"""The SlotPool's choice of a free slot, through its indexes: what ``select_slot``
would choose over every free slot, looking only at the slots that can win."""
from __future__ import annotations

import pytest

from tests.unit.fakes import ManualMainThread
from yarnflow.appmaster.jobmaster.slotpool import slot_pool as slot_pool_module
from yarnflow.appmaster.jobmaster.slotpool import SlotPool, SlotPreferences, TaskExecutorLocation
from yarnflow.core.ids import AllocationID, JobID, ResourceID
from yarnflow.core.messages import SlotOffer
from yarnflow.core.resources import ResourceSpec

SMALL, LARGE = ResourceSpec(1, 1024), ResourceSpec(4, 8192)
HOSTS, PER_HOST, SLOTS = 20, 10, 2


@pytest.fixture
def pool(monkeypatch):
    pool = SlotPool(ManualMainThread(), JobID("job"), idle_timeout=3600, request_timeout=3600,
                    on_allocated_slot_lost=lambda slot, cause: None)
    for e in range(HOSTS * PER_HOST):
        where = TaskExecutorLocation(ResourceID(f"te-{e}"), f"host-{e % HOSTS}", f"te-{e}:1", f"te-{e}:2")
        pool.offer_slots(where, None, [SlotOffer(AllocationID(f"te-{e}-{i}"), i, SMALL)
                                       for i in range(SLOTS)])
    looked_at: list[int] = []
    real = slot_pool_module.select_slot
    monkeypatch.setattr(slot_pool_module, "select_slot",
                        lambda slots, *a: looked_at.append(len(slots)) or real(slots, *a))
    pool.looked_at = looked_at     # type: ignore[attr-defined]
    yield pool
    pool.close("the test is over")


def take(pool: SlotPool, profile: ResourceSpec, prefs: SlotPreferences = SlotPreferences()):
    slot = pool.allocate_available(profile, prefs)
    assert slot is not None, "a free slot fits: the request is served at once"
    return slot


def test_a_host_preference_looks_at_that_hosts_executors_only(pool):
    slot = take(pool, SMALL, SlotPreferences(hosts=("host-3",)))
    assert slot.location.host == "host-3"
    assert pool.looked_at == [PER_HOST], "a slot of each of host-3's executors, nothing else"


def test_an_executor_preference_beats_its_host_and_spreads_after(pool):
    first = take(pool, SMALL, SlotPreferences(resource_ids=("te-5",), hosts=("host-5",)))
    assert first.location.resource_id == "te-5"
    second = take(pool, SMALL, SlotPreferences(hosts=("host-5",)))
    assert second.location.host == "host-5" and second.location.resource_id != "te-5", \
        "among equals on the host, the least-utilized executor"


def test_a_prior_allocation_wins_outright_without_looking_further(pool):
    slot = take(pool, SMALL, SlotPreferences(resource_ids=("te-0",),
                                             prior_allocations=frozenset({"te-77-1"})))
    assert slot.allocation_id == "te-77-1" and pool.looked_at == []


def test_no_preferred_slot_free_falls_back_to_the_least_utilized_executor(pool):
    slot = take(pool, SMALL, SlotPreferences(hosts=("gone-host",)))
    assert pool.looked_at == [] and slot is not None
    again = take(pool, SMALL)
    assert again.location.resource_id != slot.location.resource_id


def test_a_larger_slot_serves_when_no_exact_one_is_free(pool):
    where = TaskExecutorLocation(ResourceID("big"), "host-big", "big:1", "big:2")
    pool.offer_slots(where, None, [SlotOffer(AllocationID("big-0"), 0, LARGE)])
    for _ in range(HOSTS * PER_HOST * SLOTS):
        take(pool, SMALL)
    assert take(pool, SMALL).allocation_id == "big-0"
    assert pool.allocate_available(SMALL) is None, "then a request waits for a new slot"


def test_requests_without_preferences_spread_over_every_executor_before_doubling_up(pool):
    executors = HOSTS * PER_HOST
    first_round = [take(pool, SMALL).location.resource_id for _ in range(executors)]
    assert len(set(first_round)) == executors, "one slot of each executor before a second"
    second_round = [take(pool, SMALL).location.resource_id for _ in range(executors)]
    assert sorted(second_round) == sorted(first_round)
    assert pool.allocate_available(SMALL) is None, "every slot is taken once, none twice"


def test_a_released_slot_puts_its_executor_first_again(pool):
    taken = [take(pool, SMALL) for _ in range(HOSTS * PER_HOST + 1)]   # te-0 is half used
    freed = taken[5]
    pool.release_slot(freed.allocation_id)
    again = take(pool, SMALL)
    assert again.location.resource_id == freed.location.resource_id, \
        "its executor is empty again: the least utilized, ahead of every half-used one"
