"""How the configuration shapes the local steps of aggregates and distincts
(``table.optimizer.agg-phase-strategy``, ``table.exec.local-hash-agg.adaptive.*``).

The pipeline plans an aggregate whose functions decompose as a local step chained to
its producer and a final step past the exchange; here, per job, the local steps learn
when to stop reducing, and under ONE_PHASE pass their rows on untouched, the final
step then aggregating rows, not partial results.
"""
from __future__ import annotations

from typing import Iterable

from yarnflow.conf import Configuration, options
from yarnflow.core.jobgraph import JobVertex
from yarnflow.core.operators.aggregate import (AggregateOperator, LocalAggregateOperator,
                                               LocalAggregation)
from yarnflow.core.operators.relational import DistinctOperator


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
        if isinstance(local, DistinctOperator) and local.local:
            local.settings = settings
        if not isinstance(local, LocalAggregateOperator):
            continue
        local.settings = settings
        if strategy == "one_phase" and isinstance(final, AggregateOperator):
            local.enabled, final.final = False, False
