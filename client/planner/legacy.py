"""The JobGraph as ``Pipeline.job_graph`` built it in one method before the planner was
cut into passes (issue 82), kept only so that ``tests/integration/test_planner_passes.py``
can show, for every example and TPC-H query, that the passes build the same graph.
Delete it, and that test, once a release has run on the passes.

Its steps are the old method's, in its order; where the old method wrote into an
operator (a join's build side, the columns kept for an empty subtask), it makes the
same new operator the passes make, so the two differ in their order of work only.
"""
from __future__ import annotations

import dataclasses

from yarnflow.client.filesystems import filesystem_settings
from yarnflow.client.planner.adaptive import mark_adaptive
from yarnflow.client.planner.aggregates import configure_local_steps
from yarnflow.client.planner.chaining import chain_operators
from yarnflow.client.planner.compiler import Planning, _plan_join, _whole_row_keys
from yarnflow.client.planner.estimates import estimate_vertices
from yarnflow.client.planner.joins import break_pipelined_cycles
from yarnflow.client.planner.logical import LogicalEdge, LogicalPlan
from yarnflow.client.planner.schemas import check_schemas
from yarnflow.conf import Configuration, options
from yarnflow.conf.job_level import job_level
from yarnflow.core.fs import LocalPathRefused
from yarnflow.core.jobgraph import (JobGraph, JobVertex, PartitionType, ScheduleMode,
                                    ShipStrategy, path_error)
from yarnflow.core.operators.files import DataPathError
from yarnflow.core.tracebacks import sources_of
from yarnflow.core.user_code import UserCode


def legacy_job_graph(logical: LogicalPlan, config: Configuration) -> JobGraph:
    default_parallelism = logical.parallelism or config.get(options.DEFAULT_PARALLELISM)
    graph = JobGraph(logical.name, logical.schedule_mode)
    graph.spark_overhead_mb = config.get(options.SPARK_JVM_OVERHEAD)
    graph.job_configuration = job_level(config)
    settings = filesystem_settings(config)
    own: dict[str, JobVertex] = {}
    for vertex in logical.vertices:
        try:
            operator = vertex.operator.value.bound(settings)
            if hasattr(operator, "files"):
                operator.files()
        except (DataPathError, LocalPathRefused) as err:
            raise path_error(vertex.name, err) from None
        function = getattr(operator, "fn", None)
        if function is not None:
            operator.sources = sources_of([function])
        committer = getattr(operator, "committer", None) if vertex.committer else None
        own[vertex.id] = dataclasses.replace(
            vertex, operator=UserCode.of(operator),
            committer=UserCode.of(committer) if committer is not None else None)
    configure_local_steps([(own[e.source.id], own[e.target.id]) for e in logical.edges], config)
    unset = frozenset(v.id for v in own.values() if v.parallelism is None)
    adaptive = config.get(options.ADAPTIVE_ENABLED)
    exchange = logical.exchange if logical.exchange is not None else \
        PartitionType.BLOCKING if adaptive else PartitionType.PIPELINED
    order = [own[v.id] for v in logical.producers_first()]

    def inputs_of(v: JobVertex) -> list[JobVertex]:
        return [own[u.id] for u in logical.inputs_of(v)]
    schemas = check_schemas(order, inputs_of,
                            lambda v: [(own[e.source.id], e.keys) for e in logical.edges
                                       if e.target.id == v.id],
                            lambda v: logical.step_of.get(v.id, v.name))
    estimates = estimate_vertices(order, inputs_of)
    for vertex in own.values():
        vertex.estimate = estimates[vertex.id]
        vertex.schema = schemas[vertex.id]
        planned = vertex.operator.value.planned([schemas.get(u.id) for u in inputs_of(vertex)])
        vertex.operator = UserCode.of(planned)
        graph.add_vertex(vertex)
    # the old method's helpers, now the passes': given the same copies and schemas
    state = Planning(logical, config, adaptive, exchange, default_parallelism, own, unset,
                     schemas, estimates)
    edges: list[LogicalEdge] = [dataclasses.replace(e, source=own[e.source.id],
                                                    target=own[e.target.id],
                                                    keys=_whole_row_keys(state, e))
                                for e in logical.edges]
    threshold = config.get(options.BROADCAST_THRESHOLD)
    for join in logical.joins:
        at_run_time = adaptive and join.vertex.id in unset and all(
            (side.partition_type or exchange) is PartitionType.BLOCKING for side in join.sides)
        edges += _plan_join(state, join, threshold, at_run_time)
    graph.join_plans.update(state.join_plans)
    for vertex in own.values():
        if vertex.parallelism is None:
            vertex.parallelism = own[logical.inputs_of(vertex)[0].id].parallelism \
                if vertex.collect else default_parallelism
    for edge in edges:
        ship = edge.ship
        if ship is None:
            ship = ShipStrategy.FORWARD if edge.source.parallelism == edge.target.parallelism \
                else ShipStrategy.REBALANCE
        partition_type = edge.partition_type or (
            PartitionType.PIPELINED if ship is ShipStrategy.FORWARD else exchange)
        graph.connect(edge.source, edge.target, ship, edge.keys, partition_type,
                      edge.target_input)
    break_pipelined_cycles(graph)
    if adaptive and mark_adaptive(graph, unset):
        graph.schedule_mode = ScheduleMode.LAZY_FROM_SOURCES
    graph.resolve(default_parallelism)
    graph.validate(options.largest_worker(config), options.default_slot_profile(config))
    return chain_operators(graph) if config.get(options.OPERATOR_CHAINING) else graph
