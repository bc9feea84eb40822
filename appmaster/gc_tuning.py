"""The ApplicationMaster's garbage collector, tuned for a large job's long-lived state.

A JobMaster holds a job's ExecutionGraph for the job's whole life: at parallelism
10,000 that is a few hundred thousand objects, made in bursts (the graph, the shared
slots, the deployments) and kept. With CPython's default thresholds (700, 10, 10) a
burst of that size runs hundreds of young collections and several full ones, each
full one walking every object the process holds; in ``bench/scheduler_scale.py`` they
were a third of building, assigning and describing the job. A larger young generation
lets a burst of allocations finish before the collector looks, and the objects the
process made while starting (modules, gRPC, pyarrow) are frozen out of every later
collection, since they live as long as the process. Cyclic garbage is still
collected, only less often; objects are still freed by reference counting at once.
"""
from __future__ import annotations

import gc

YOUNG_GENERATION_THRESHOLD = 50_000    # allocations between young collections (CPython: 700)


def tune_garbage_collector() -> None:
    """Call once, after the process has imported what it runs (freezes what exists)."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, older, oldest)
    gc.collect()
    gc.freeze()
