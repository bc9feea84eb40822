"""Sizing an adaptive stage's slots from the bytes its subtasks will read (issue 36,
item 4): neither Flink nor Spark sizes containers from what it measured; yarnflow
asks for containers per slot profile, so a stage that reads 10x less gets smaller
containers. An operator with a ResourceSpec, or one running Spark (whose JVM sizes
itself), keeps its profile."""
from __future__ import annotations

from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.decider import InputBytes
from yarnflow.core.deployment import ConsumerRead
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.slot_memory import SlotMemory


def bytes_read(inputs: list[InputBytes], reads: dict[str, tuple[ConsumerRead, ...]],
               parallelism: int) -> list[int]:
    """The bytes each subtask reads, over every input (unknown counts as nothing)."""
    out = [0] * parallelism
    for one in inputs:
        consumer_reads = reads.get(one.result_id, ())
        for c, read in enumerate(consumer_reads[:parallelism]):
            for k in read.partitions:
                sizes = one.partitions[k] if k < len(one.partitions) else None
                if sizes is not None:
                    out[c] += sum(sizes[j] for j in read.subpartitions
                                  if j < len(sizes)) // max(1, read.slices)
    return out


def sized_profile(largest_read: int, default: ResourceSpec, settings: SlotMemory) -> ResourceSpec:
    return default.with_memory(settings.for_bytes(largest_read))
