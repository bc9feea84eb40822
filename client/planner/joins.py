"""Choosing a join's ship strategies from its inputs' estimates.

``auto`` broadcasts a side estimated at most ``planner.broadcast-threshold`` and keeps
the other side where it is (FORWARD): every subtask joins its own share against the
whole small side, so a skewed key cannot pile rows onto one subtask. Without such a
side both inputs are hash-partitioned on the keys. ``broadcast`` and ``hash`` force
the choice.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from yarnflow.core.estimates import Estimate, format_bytes
from yarnflow.core.jobgraph import JobEdge, JobGraph, PartitionType
from yarnflow.core.operators.join import JoinType


class JoinStrategy(enum.Enum):
    AUTO = "auto"
    BROADCAST = "broadcast"
    HASH = "hash"

    @classmethod
    def parse(cls, value: "str | JoinStrategy") -> "JoinStrategy":
        if isinstance(value, JoinStrategy):
            return value
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"join strategy {value!r} is not one of 'auto', 'broadcast', "
                             "'hash'") from None


@dataclass(frozen=True)
class JoinPlan:
    # BROADCAST or HASH; AUTO only when decided at run time (adaptive execution)
    strategy: JoinStrategy
    broadcast_input: int | None     # the input sent whole to every subtask
    build_input: int                # the input the join holds in memory (as planned)
    reason: str
    buildable: tuple[int, ...] = (0, 1)    # the inputs that may be broadcast or built
    join_type: str = "inner"               # pyarrow's name of its JoinType, for explain


def plan_join(requested: JoinStrategy, left: Estimate, right: Estimate, threshold: int,
              names: tuple[str, str], how: JoinType = JoinType.INNER,
              at_run_time: bool = False) -> JoinPlan:
    """Only a side no row of which must come out unmatched may be broadcast or held as
    the build side (``JoinType``): a left outer join's right side, say; a full outer
    join is hash-partitioned, either side built. ``at_run_time`` (adaptive execution):
    an ``auto`` or ``hash`` join is hash-partitioned on both sides and decided once both
    are written, from their measured bytes, not from these estimates."""
    estimates = (left, right)
    allowed = how.broadcastable
    if requested is JoinStrategy.BROADCAST:
        if not allowed:
            raise ValueError(f"a {how.value} join keeps every row of both sides, so neither "
                             "can be broadcast")
        side = allowed[-1]
        return JoinPlan(JoinStrategy.BROADCAST, side, side, f"broadcast {names[side]} (forced)")
    if at_run_time:
        allowed = how.buildable
        build = allowed[-1]
        if requested is JoinStrategy.AUTO and how.broadcastable:
            sides = " or ".join(names[i] for i in allowed)
            return JoinPlan(JoinStrategy.AUTO, None, build,
                            f"decided at run time: {sides} broadcast if it measures within "
                            f"planner.broadcast-threshold ({format_bytes(threshold)}), else "
                            "hash; skewed partitions split", allowed)
        why = "hash both sides (forced)" if how.broadcastable else \
            f"a {how.value} join keeps every row of both sides: hash both"
        return JoinPlan(JoinStrategy.HASH, None, build, f"{why}; the build side and skewed "
                        "partitions decided at run time", allowed)
    if requested is JoinStrategy.AUTO:
        small = [i for i in allowed if (estimates[i].bytes or threshold + 1) <= threshold]
        if small:
            side = min(small, key=lambda i: estimates[i].bytes or 0)
            return JoinPlan(JoinStrategy.BROADCAST, side, side,
                            f"{names[side]} is estimated at {format_bytes(estimates[side].bytes)}, "
                            f"within planner.broadcast-threshold ({format_bytes(threshold)}): "
                            f"broadcast it, keep {names[1 - side]} where it is")
        why = "; ".join(f"{names[i]} {format_bytes(estimates[i].bytes)}" for i in allowed)
        reason = f"no side within planner.broadcast-threshold ({format_bytes(threshold)}): {why}" \
            if allowed else f"a {how.value} join keeps every row of both sides: hash both"
    else:
        reason = "hash both sides (forced)"
    allowed = how.buildable
    known = [i for i in allowed if estimates[i].bytes is not None]
    build = min(known, key=lambda i: estimates[i].bytes or 0) if len(known) == len(allowed) \
        else allowed[-1]
    return JoinPlan(JoinStrategy.HASH, None, build, reason)


def break_pipelined_cycles(graph: JobGraph) -> list[JobEdge]:
    """Flink's pipeline breakers for batch jobs. An operator with a deferred input
    (``Operator.deferred_input``: a join's probe side, read once its build side is read
    to the end) leaves a producer writing that input over a bounded pipelined exchange
    waiting meanwhile. That wait is a deadlock when what the build input needs is
    held up behind it: when the probe's producer also feeds others (two joins reading
    one source in opposite orders), or when both inputs come from one source (a self
    join). Such a probe exchange becomes BLOCKING: the producer writes it out in full
    and goes on. Returns the edges changed."""
    ancestors: dict[str, set[str]] = {}
    for vertex in graph.topological_order():
        ancestors[vertex.id] = {vertex.id}.union(
            *(ancestors[e.source.id] for e in graph.inputs_of(vertex)))
    changed = []
    for vertex in graph.vertices.values():
        probe_input = vertex.operator.value.deferred_input()
        if probe_input is None:
            continue
        edges = {e.target_input: e for e in graph.inputs_of(vertex)}
        probe, build = edges[probe_input], edges[1 - probe_input]
        if probe.partition_type is not PartitionType.PIPELINED:
            continue
        if len(graph.outputs_of(probe.source)) > 1 or \
                ancestors[probe.source.id] & ancestors[build.source.id]:
            probe.partition_type = PartitionType.BLOCKING
            changed.append(probe)
    return changed
