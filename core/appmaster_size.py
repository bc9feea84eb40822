"""How much memory a per-job ApplicationMaster's container needs, from its job.

The container holds Skein's ApplicationMaster JVM and yarnflow's Python process (the
ResourceManager, the JobMaster and the gRPC server). The Python process grows with the
executors it talks to (a mutual-TLS channel, gateways and heartbeat state each) and
with the subtasks it tracks (the ExecutionGraph, their descriptors, details and
metrics). Measured on this project's benchmarks (docs/pages/architecture.md, "The ApplicationMaster's
memory"):

- ``bench/rm_scale.py``: 155 MB with 50 executors, 246 MB with 500, 346 MB with 1,000
  (one subtask each): 0.2 MB per executor over a base of about 145 MB;
- ``bench/scheduler_scale.py``: a 10,000 x 10,000 job's graph, slots and descriptors
  add 30 MB to the process, 1.5 KB per subtask.

A fixed container either wastes memory on every small job or is killed by YARN under a
large one; Flink sizes its JobManager's process (``jobmanager.memory.process.size``)
the same way from what it holds.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from yarnflow.core.worker_spec import WorkerSpec, executors_needed

if TYPE_CHECKING:
    from yarnflow.core.jobgraph import JobGraph
    from yarnflow.core.resources import ResourceSpec

SKEIN_JVM_MB = 384          # Skein's ApplicationMaster (-Xmx128m): about 350 MB resident
PYTHON_BASE_MB = 160        # yarnflow's process with nothing to track (145 MB measured)
PER_EXECUTOR_MB = 0.25      # 0.2 MB measured
PER_SUBTASK_MB = 4 / 1024   # 1.5 KB measured for the graph; details and metrics on top
HEADROOM = 1.25             # Python's allocator and the garbage collector's lag
MINIMUM_MB = 1024           # what every ApplicationMaster got before it was sized
STEP_MB = 256


def planned_executors(graph: "JobGraph", specs: dict["ResourceSpec", WorkerSpec],
                      default_slot: "ResourceSpec") -> int:
    """The most executors the job holds at once: all its slots, packed as planned."""
    return sum(executors_needed(graph, specs, default_slot).values())


def appmaster_memory_mb(graph: "JobGraph", specs: dict["ResourceSpec", WorkerSpec],
                        default_slot: "ResourceSpec", largest_mb: int) -> int:
    """The container memory for the job's ApplicationMaster: at least ``MINIMUM_MB``,
    in steps of ``STEP_MB``, at most the largest container YARN grants."""
    subtasks = sum(v.parallelism or 1 for v in graph.vertices.values())
    need = (SKEIN_JVM_MB + PYTHON_BASE_MB
            + PER_EXECUTOR_MB * planned_executors(graph, specs, default_slot)
            + PER_SUBTASK_MB * subtasks) * HEADROOM
    sized = max(MINIMUM_MB, STEP_MB * math.ceil(need / STEP_MB))
    return min(sized, largest_mb)
