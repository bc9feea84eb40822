"""Session mode's container sizes: a fixed ladder instead of one size per job profile.

A session does not know its jobs up front, so it declares a few container sizes
(``session.container-sizes``, one Skein service each). A container of each size holds
one slot of that size less the executor's own overhead; a slot request gets the
smallest rung whose slot fits its profile (Flink's fine-grained resource management
rounds up the same way). A profile no rung fits is refused at job submission, naming
the sizes on offer.
"""
from __future__ import annotations

from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.core.units import parse_memory_mb
from yarnflow.core.resources import ResourceSpec


class NoContainerFits(ValueError):
    """A slot profile larger than every container size the session offers."""


def parse_container_sizes(text: str) -> list[ResourceSpec]:
    """``"1c-1536m, 2c-4g"`` -> container sizes (cores and memory per container)."""
    sizes = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        cpu, sep, memory = item.partition("c-")
        try:
            if not sep:
                raise ValueError(item)
            sizes.append(ResourceSpec(float(cpu), parse_memory_mb(memory)))
        except ValueError:
            raise ValueError(f"container size {item!r} is not '<cores>c-<memory>', "
                             "e.g. '2c-4096m' or '4c-8g'") from None
    if not sizes:
        raise ValueError("session.container-sizes names no container size")
    return sizes


class ContainerLadder:
    def __init__(self, containers: list[ResourceSpec], overhead_mb: int) -> None:
        self.specs = sorted(
            (WorkerSpec(ResourceSpec(c.cpu, c.memory_mb - overhead_mb, c.gpus), 1, overhead_mb)
             for c in containers if c.memory_mb > overhead_mb),
            key=lambda s: (s.container.memory_mb, s.container.cpu))
        if len(self.specs) != len(containers):
            raise ValueError(f"every session container size needs more than the executor's "
                             f"own {overhead_mb} MB (taskmanager.memory.overhead)")

    def spec_for(self, profile: ResourceSpec) -> WorkerSpec:
        if profile.node_label:
            raise NoContainerFits(
                f"a slot of {profile.label()} names node label '{profile.node_label}', but a "
                "session declares its containers when it starts, all in one partition; fix: "
                "run the job per-job (-t yarn-per-job), or drop node_label from its "
                "ResourceSpecs and start a session in that partition (-D "
                "yarn.taskmanager.node-label=...)")
        for spec in self.specs:
            if profile.fits_in(spec.slot_profile):
                return spec
        raise NoContainerFits(
            f"a slot of {profile.label()} fits no container size of this session "
            f"({self.describe()}); fix: lower the operators' ResourceSpecs, or start a "
            "session with a larger size in session.container-sizes")

    def describe(self) -> str:
        return ", ".join(f"{s.container.label()} (slot {s.slot_profile.label()})"
                         for s in self.specs)
