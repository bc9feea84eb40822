"""Which held slot serves a request (seed 002: location preference, previous allocation,
and Flink's evenly-spread tie-break)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from yarnflow.appmaster.jobmaster.slotpool.slots import PhysicalSlot
from yarnflow.core.resources import ResourceSpec

LOCAL_WEIGHT = 10
HOST_LOCAL_WEIGHT = 1


@dataclass(frozen=True)
class SlotPreferences:
    """Preferred executors (a resource id may repeat: more producers there weigh more),
    their hosts, and allocations an earlier attempt ran in."""
    resource_ids: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    prior_allocations: frozenset[str] = field(default_factory=frozenset)
    # hosts that store a first attempt's input splits: the only ones a new container
    # is asked on (a producer's host, or a lost attempt's, may be a host that is gone)
    input_hosts: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.resource_ids or self.hosts or self.prior_allocations)

    def ranked_hosts(self) -> tuple[str, ...]:
        """The input hosts once each, the most named first (ties keep their order):
        what the ResourceManager is asked to start a worker on when no slot is free."""
        counts: dict[str, int] = {}
        for host in self.input_hosts:
            if host:
                counts[host] = counts.get(host, 0) + 1
        return tuple(sorted(counts, key=lambda h: -counts[h]))


def select_slot(candidates: Iterable[PhysicalSlot], profile: ResourceSpec,
                preferences: SlotPreferences,
                utilization: dict[str, float]) -> PhysicalSlot | None:
    """The best free slot that fits ``profile``, or None.

    Order: a prior allocation wins outright (a restart returns where its state is);
    then locality score (same executor 10, same host 1, per preferred input); then the
    least-utilized executor, so equally good choices spread round-robin across
    executors instead of filling the first one; then an exact profile over a larger one.
    """
    local_counts: dict[str, int] = {}
    for resource_id in preferences.resource_ids:
        local_counts[resource_id] = local_counts.get(resource_id, 0) + 1
    host_counts: dict[str, int] = {}
    for host in preferences.hosts:
        host_counts[host] = host_counts.get(host, 0) + 1

    best: PhysicalSlot | None = None
    best_key: tuple[float, ...] | None = None
    for slot in candidates:
        if not profile.fits_in(slot.profile):
            continue
        if slot.allocation_id in preferences.prior_allocations:
            return slot
        score = (LOCAL_WEIGHT * local_counts.get(slot.location.resource_id, 0)
                 + HOST_LOCAL_WEIGHT * host_counts.get(slot.location.host, 0))
        key = (score, -utilization.get(slot.location.resource_id, 0.0),
               1.0 if slot.profile == profile else 0.0)
        if best_key is None or key > best_key:
            best, best_key = slot, key
    return best
