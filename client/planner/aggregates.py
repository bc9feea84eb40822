"""How the configuration shapes the local steps of aggregates and distincts
(``table.optimizer.agg-phase-strategy``, ``table.exec.local-hash-agg.adaptive.*``).

The pipeline plans an aggregate whose functions decompose as a LOCAL step chained to
its producer and a FINAL step past the exchange; here, per job, the local steps learn
when to stop reducing, and under ONE_PHASE the local step becomes the identity and the
final step a WHOLE one, aggregating rows, not partial results. Each change is a new
operator on the plan's copy of the vertex: the user's operators are never changed.
"""
from __future__ import annotations

from typing import Iterable

from yarnflow.conf import Configuration, options
from yarnflow.core.jobgraph import JobVertex
from yarnflow.core.operators.aggregate import AggregateOperator, LocalAggregation
from yarnflow.core.operators.phase import Phase
from yarnflow.core.operators.relational import DistinctOperator
from yarnflow.core.operators.transforms import IdentityOperator
from yarnflow.core.user_code import UserCode


def configure_local_steps(edges: Iterable[tuple[JobVertex, JobVertex]],
                          config: Configuration) -> None:
    """``edges``: (producer, consumer) of the plan's copies of the vertices."""
    strategy = config.get(options.AGG_PHASE_STRATEGY)
    settings = LocalAggregation(
        adaptive=strategy == "auto" and config.get(options.LOCAL_AGG_ADAPTIVE),
        sampling_rows=config.get(options.LOCAL_AGG_SAMPLING),
        distinct_rate=config.get(options.LOCAL_AGG_RATE))
    for source, target in edges:
        local, final = source.operator.value, target.operator.value
        if not isinstance(local, (AggregateOperator, DistinctOperator)) or \
                local.phase is not Phase.LOCAL:
            continue
        if strategy == "one_phase" and isinstance(local, AggregateOperator) and \
                isinstance(final, AggregateOperator) and final.phase is Phase.FINAL:
            source.operator = UserCode.of(IdentityOperator())
            target.operator = UserCode.of(final.in_phase(Phase.WHOLE))
            continue
        source.operator = UserCode.of(local.with_settings(settings))
