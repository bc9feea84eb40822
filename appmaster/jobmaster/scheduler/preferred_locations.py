"""Where a subtask would like to run (seed 002).

A restarted subtask prefers where its previous attempt ran (its state and the
executor's caches are there). Otherwise it prefers the executors of its producers
— but an input with more than eight producers says nothing useful about locality
(its data comes from everywhere), so such inputs are ignored, as Flink does.
"""
from __future__ import annotations

from yarnflow.appmaster.jobmaster.executiongraph import ExecutionVertex
from yarnflow.appmaster.jobmaster.slotpool import SlotPreferences

MAX_PRODUCERS_FOR_LOCALITY = 8
NO_PREFERENCES = SlotPreferences()


def preferred_locations(vertex: ExecutionVertex) -> SlotPreferences:
    if vertex.prior_executions:
        prior_allocation = vertex.prior_allocation_id()
        prior_resource = vertex.prior_resource_id()
        if prior_resource is not None:
            return SlotPreferences(
                resource_ids=(prior_resource,),
                prior_allocations=frozenset({prior_allocation} if prior_allocation else ()))
    resource_ids: list[str] = []
    hosts: list[str] = []
    for group in vertex.consumed:
        if len(group) > MAX_PRODUCERS_FOR_LOCALITY:
            continue
        for partition in group.partitions():
            slot = partition.producer.current.slot
            if slot is not None:
                resource_ids.append(slot.location.resource_id)
                hosts.append(slot.location.host)
    if not resource_ids:
        return NO_PREFERENCES
    return SlotPreferences(resource_ids=tuple(resource_ids), hosts=tuple(hosts))


def merge(preferences: list[SlotPreferences]) -> SlotPreferences:
    preferences = [p for p in preferences if p is not NO_PREFERENCES]
    if not preferences:          # most members of most jobs: nothing to build
        return NO_PREFERENCES
    resource_ids: list[str] = []
    hosts: list[str] = []
    prior: set[str] = set()
    inputs: list[str] = []
    for pref in preferences:
        resource_ids.extend(pref.resource_ids)
        hosts.extend(pref.hosts)
        prior.update(pref.prior_allocations)
        inputs.extend(pref.input_hosts)
    return SlotPreferences(tuple(resource_ids), tuple(hosts), frozenset(prior), tuple(inputs))
