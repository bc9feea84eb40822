"""How the JobMaster scales: a source(P) -ALL_TO_ALL-> sink(P) job, slots offered in
process (no subprocesses). Prints one JSON object.

    python bench/scheduler_scale.py --parallelism 10000

``assign_ms``: every subtask's slot from a warm pool, without preferences;
``assign_local_ms``: the same when each source subtask prefers its splits' host (a
request with preferences must not look at every free slot);
``descriptor_mb_total``: every deployment as sent, each carrying the shared parts
(task information, shuffle descriptors) its executor was not sent yet;
``total_ms``: build + assign + descriptors; ``am_rss_mb``: the process's resident memory
once all of it is done and the job's state is held, as an ApplicationMaster holds it.
The process's garbage collector is tuned as the ApplicationMaster's is
(``appmaster/gc_tuning.py``).

Anchor (seed material): Flink 1.14 builds this ExecutionGraph at P=10000 in 627 ms
(11.4 s in 1.12) and deploys it in 17 s.
"""
from __future__ import annotations

import argparse
from concurrent.futures import Future
import gc
import json
import resource
import time


from yarnflow.appmaster.gc_tuning import tune_garbage_collector
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, ExecutionState
from yarnflow.appmaster.jobmaster.scheduler.allocator import SlotSharingSlotAllocator
from yarnflow.appmaster.jobmaster.scheduler.deployment import build_descriptor
from yarnflow.appmaster.jobmaster.scheduler.deployment_parts import DeploymentParts
from yarnflow.appmaster.jobmaster.scheduler.slot_sharing import build_slot_sharing_groups
from yarnflow.appmaster.jobmaster.slotpool import SlotPool, TaskExecutorLocation
from yarnflow.core.messages import SlotOffer
from yarnflow.core.jobgraph import JobGraph, JobVertex, ShipStrategy
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.codec import tdd_to_bytes
from yarnflow.rpc.endpoint import MainThread
from yarnflow.core.ids import AllocationID, ResourceID
from yarnflow.core.user_code import UserCode

SLOTS_PER_EXECUTOR = 10
HOSTS = 50


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def job(parallelism: int) -> JobGraph:
    graph = JobGraph("scale")
    src = graph.add_vertex(JobVertex("source", UserCode.received(b"op"), parallelism, num_inputs=0))
    sink = graph.add_vertex(JobVertex("sink", UserCode.received(b"op"), parallelism, num_inputs=1))
    graph.connect(src, sink, ShipStrategy.HASH, ["k"])
    return graph.resolve(1)


def warm_pool(main_thread: MainThread, eg: ExecutionGraph, p: int, profile: ResourceSpec) -> SlotPool:
    """Free slots for every subtask, SLOTS_PER_EXECUTOR per executor, on HOSTS hosts."""
    pool = SlotPool(main_thread, eg.job_id, idle_timeout=3600, request_timeout=3600,
                    on_allocated_slot_lost=lambda slot, cause: None)
    for e in range(-(-p // SLOTS_PER_EXECUTOR)):
        location = TaskExecutorLocation(ResourceID(f"te-{e}"), f"host-{e % HOSTS}", f"te-{e}:1", f"te-{e}:2")
        pool.offer_slots(location, None, [SlotOffer(AllocationID(f"te-{e}-{i}"), i, profile)
                                          for i in range(SLOTS_PER_EXECUTOR)])
    return pool


def assign_on_input_hosts_ms(graph: JobGraph, p: int, profile: ResourceSpec) -> float:
    """The same assignment when every source subtask prefers the host its splits are
    on, as a file source's do: each request has preferences to match."""
    eg = ExecutionGraph(graph)
    main_thread = MainThread("bench-local")
    pool = warm_pool(main_thread, eg, p, profile)
    t0 = time.perf_counter()
    groups = build_slot_sharing_groups(eg, {"default": [profile]})
    allocator = SlotSharingSlotAllocator(
        pool, groups, input_hosts=lambda v: f"host-{v.subtask_index % HOSTS}" if v.job_vertex.is_source else "")
    vertices = list(eg.all_execution_vertices())
    for v in vertices:
        v.current.transition(ExecutionState.SCHEDULED)
    allocation = allocator.allocate(vertices)
    assert not allocation.waiting, "a warm pool serves every request"
    for v, slot in allocation.ready.items():
        v.current.slot = slot
    elapsed = (time.perf_counter() - t0) * 1000
    main_thread.shutdown()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parallelism", type=int, default=10000)
    p = parser.parse_args().parallelism
    tune_garbage_collector()      # as the ApplicationMaster's process does
    graph = job(p)
    profile = ResourceSpec(1, 1024)
    gc.collect()

    t0 = time.perf_counter()
    eg = ExecutionGraph(graph)
    build_ms = (time.perf_counter() - t0) * 1000

    main_thread = MainThread("bench")
    pool = warm_pool(main_thread, eg, p, profile)
    t0 = time.perf_counter()
    groups = build_slot_sharing_groups(eg, {"default": [profile]})
    allocator = SlotSharingSlotAllocator(pool, groups)
    vertices = list(eg.all_execution_vertices())
    for v in vertices:
        v.current.transition(ExecutionState.SCHEDULED)
    allocation = allocator.allocate(vertices)
    assert not allocation.waiting, "a warm pool serves every request"
    for v, slot in allocation.ready.items():
        v.current.slot = slot
    assign_ms = (time.perf_counter() - t0) * 1000
    slots_used = len({v.current.slot.allocation_id for v in vertices})

    t0 = time.perf_counter()
    total_bytes = 0
    parts = DeploymentParts(offload_min_size=1 << 20)
    for v in vertices:
        v.current.transition(ExecutionState.DEPLOYING)
        # built, given the parts its executor lacks, and put in wire form, as a deployment is
        slot = v.current.slot
        sent = parts.prepare(slot.location.resource_id, build_descriptor(v.current, "jm", "jm:0"))
        assert not isinstance(sent, Future), "nothing is offloaded at this size"
        total_bytes += len(tdd_to_bytes(sent))
    deploy_ms = (time.perf_counter() - t0) * 1000
    main_thread.shutdown()
    am_rss_mb = rss_mb()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # one job's, before the next
    assign_local_ms = assign_on_input_hosts_ms(graph, p, profile)

    print(json.dumps({
        "parallelism": p, "build_ms": round(build_ms, 1), "assign_ms": round(assign_ms, 1),
        "deploy_descriptors_ms": round(deploy_ms, 1),
        "total_ms": round(build_ms + assign_ms + deploy_ms, 1), "am_rss_mb": round(am_rss_mb, 1),
        "peak_mb": round(peak_mb, 1),
        "slots_used": slots_used, "descriptor_mb_total": round(total_bytes / 2**20, 1),
        "assign_local_ms": round(assign_local_ms, 1),
    }))


if __name__ == "__main__":
    main()
