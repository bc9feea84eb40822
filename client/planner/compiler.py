"""From a logical plan to the JobGraph, one pass at a time, in Flink's order from the
StreamGraph to the JobGraph.

Each pass reads what the passes before it decided and adds its own decisions to the
``Planning``: on the plan's copies of the nodes (never the user's), as annotations
(schemas, estimates, join plans), or as a new operator on a copy where the decision
is the operator's (a local step's adaptation, a join's build side, the input columns
an operator keeps for a subtask that got no rows). No pass changes an operator
object: each makes a new one. ``yarnflow explain --passes`` prints the plan after
each pass (``describe``).

1. ``bind``: copies of the nodes, each operator bound to the job's file systems (a
   missing input is refused here, by name).
2. ``streaming``: batch or streaming (``execution.runtime-mode``); a streaming job's
   operators as a stream runs them (``streaming.py``), those that cannot be refused.
3. ``local-steps``: local aggregates and distincts learn how to adapt; under
   ONE_PHASE the local step is the identity and the final step aggregates rows.
4. ``schemas``: every node's columns, checked against every column an operator names.
5. ``estimates``: rows and bytes of every node, from its sources' metadata.
6. ``join-strategies``: broadcast or hash, and the build side, from the estimates.
7. ``parallelism``: the pipeline's default where the user set none.
8. ``exchanges``: each edge's ship strategy and partition type.
9. ``pipeline-breakers``: a cycle of pipelined edges broken with a BLOCKING one (a
   streaming job's edges all PIPELINED, its subtasks all deployed at once).
10. ``adaptive``: the vertices whose parallelism is decided at run time.
11. ``validate``: the JobGraph resolved and checked against the largest container.
12. ``chaining``: forward edges joined into chains.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa

from yarnflow.client.filesystems import filesystem_settings
from yarnflow.client.planner.adaptive import mark_adaptive
from yarnflow.client.planner.aggregates import configure_local_steps
from yarnflow.client.planner.chaining import chain_operators
from yarnflow.client.planner.estimates import estimate_vertices
from yarnflow.client.planner.joins import JoinPlan, JoinStrategy, break_pipelined_cycles, plan_join
from yarnflow.client.planner.logical import LogicalEdge, LogicalJoin, LogicalPlan
from yarnflow.client.planner.schemas import check_schemas
from yarnflow.conf import Configuration, options
from yarnflow.client.planner.streaming import (finish_graph, needs_a_stream, rolling_policy,
                                              runtime_mode, streaming_operator)
from yarnflow.conf.job_level import job_level
from yarnflow.core.estimates import UNKNOWN, Estimate
from yarnflow.core.fs import LocalPathRefused
from yarnflow.core.jobgraph import (AdaptiveJoin, InvalidPipelineError, JobGraph, JobVertex,
                                    PartitionType, ScheduleMode, ShipStrategy, path_error)
from yarnflow.core.operators.files import DataPathError
from yarnflow.core.operators.join import HashJoinOperator
from yarnflow.core.operators.relational import DistinctOperator
from yarnflow.core.tracebacks import sources_of
from yarnflow.core.user_code import UserCode


@dataclass
class Planning:
    """The plan as the passes so far left it."""
    logical: LogicalPlan
    config: Configuration
    adaptive: bool                       # execution.batch.adaptive.enabled
    exchange: PartitionType              # a redistribution's partition type, unless shaped
    default_parallelism: int
    nodes: dict[str, JobVertex] = field(default_factory=dict)     # id -> the plan's copy
    unset: frozenset[str] = frozenset()  # ids whose parallelism the user left open
    schemas: dict[str, pa.Schema | None] = field(default_factory=dict)
    estimates: dict[str, Estimate] = field(default_factory=dict)
    join_plans: dict[str, JoinPlan] = field(default_factory=dict)
    edges: list[LogicalEdge] = field(default_factory=list)      # between copies, as decided
    graph: JobGraph | None = None
    streaming: bool = False              # an unbounded job (client/planner/streaming.py)

    def own(self, vertex: JobVertex) -> JobVertex:
        """The plan's copy of a node of the logical plan."""
        return self.nodes[vertex.id]

    def inputs_of(self, vertex: JobVertex) -> list[JobVertex]:
        return [self.nodes[v.id] for v in self.logical.inputs_of(vertex)]

    def order(self) -> list[JobVertex]:
        return [self.nodes[v.id] for v in self.logical.producers_first()]

    def replace_operator(self, vertex: JobVertex, operator: Any) -> None:
        self.nodes[vertex.id].operator = UserCode.of(operator)

    @property
    def job_graph(self) -> JobGraph:
        assert self.graph is not None, "the exchanges pass makes the JobGraph"
        return self.graph


Pass = Callable[[Planning], None]


def bind(plan: Planning) -> None:
    settings = filesystem_settings(plan.config)
    for vertex in plan.logical.vertices:
        try:
            operator = vertex.operator.value.bound(settings)
            if hasattr(operator, "files"):
                operator.files()          # a missing input is refused here, by name
        except (DataPathError, LocalPathRefused) as err:
            raise path_error(vertex.name, err) from None
        function = getattr(operator, "fn", None)
        if function is not None:                 # the user's, which may fail on a host
            operator.sources = sources_of([function])
        committer = getattr(operator, "committer", None) if vertex.committer else None
        plan.nodes[vertex.id] = dataclasses.replace(
            vertex, operator=UserCode.of(operator),
            committer=UserCode.of(committer) if committer is not None else None)
    plan.unset = frozenset(v.id for v in plan.nodes.values() if v.parallelism is None)


def streaming(plan: Planning) -> None:
    plan.streaming = runtime_mode(plan.logical, plan.config)
    if not plan.streaming:
        for vertex in plan.nodes.values():
            refused = needs_a_stream(vertex.operator.value)
            if refused:
                raise InvalidPipelineError(vertex.name, refused, "read an unbounded source "
                                           "(read_kafka, or a read with watch=)")
            if getattr(vertex.operator.value, "time_buckets", None) is not None:
                raise InvalidPipelineError(vertex.name, "time buckets (dt=/hour= directories) "
                                           "are for an unbounded input's sink",
                                           "partition a bounded output by its columns")
        return
    checkpoints = plan.config.get(options.CHECKPOINT_INTERVAL) > 0
    settings = filesystem_settings(plan.config)
    for vertex in plan.nodes.values():
        operator = streaming_operator(vertex.name, vertex.operator.value, checkpoints, settings,
                                      plan.config.get(options.BUFFER_TIMEOUT),
                                      rolling_policy(plan.config))
        if operator is not vertex.operator.value:
            plan.replace_operator(vertex, operator)
        vertex.committer = None          # a streaming sink commits at checkpoints itself


def local_steps(plan: Planning) -> None:
    configure_local_steps([(plan.own(e.source), plan.own(e.target)) for e in plan.logical.edges],
                          plan.config)


def schemas(plan: Planning) -> None:
    order = plan.order()
    plan.schemas = check_schemas(
        order, lambda v: plan.inputs_of(v),
        lambda v: [(plan.nodes[e.source.id], e.keys) for e in plan.logical.edges
                   if e.target.id == v.id],
        lambda v: plan.logical.step_of.get(v.id, v.name))
    for vertex in order:
        vertex.schema = plan.schemas[vertex.id]
        inputs = [plan.schemas.get(v.id) for v in plan.inputs_of(vertex)]
        planned = vertex.operator.value.planned(inputs)
        if planned is not vertex.operator.value:     # it keeps what it was planned with
            plan.replace_operator(vertex, planned)


def estimates(plan: Planning) -> None:
    plan.estimates = estimate_vertices(plan.order(), lambda v: plan.inputs_of(v))
    for vertex in plan.nodes.values():
        vertex.estimate = plan.estimates[vertex.id]


def join_strategies(plan: Planning) -> None:
    threshold = plan.config.get(options.BROADCAST_THRESHOLD)
    for join in plan.logical.joins:
        at_run_time = plan.adaptive and join.vertex.id in plan.unset and all(
            (side.partition_type or plan.exchange) is PartitionType.BLOCKING
            for side in join.sides)
        plan.edges += _plan_join(plan, join, threshold, at_run_time)


def _plan_join(plan: Planning, join: LogicalJoin, threshold: int,
               at_run_time: bool) -> list[LogicalEdge]:
    """The join's two input edges, as its plan says: the broadcast side BROADCAST and
    the other side as the user shaped it at its own parallelism, or both HASH on the
    keys. ``at_run_time`` (adaptive execution): both HASH and BLOCKING, the strategy
    left to what the inputs measure once written."""
    inputs = (plan.own(join.left.vertex), plan.own(join.right.vertex))
    vertex = plan.own(join.vertex)
    keys = (tuple(join.left_keys), tuple(join.right_keys))
    operator = vertex.operator.value
    assert isinstance(operator, HashJoinOperator), operator
    try:
        decided = plan_join(join.strategy, inputs[0].estimate or UNKNOWN,
                            inputs[1].estimate or UNKNOWN, threshold,
                            (inputs[0].name, inputs[1].name), operator.join_type,
                            at_run_time=at_run_time)
    except ValueError as err:
        raise InvalidPipelineError(vertex.name, str(err), "join it with strategy='auto' "
                                   "or 'hash'") from None
    decided = dataclasses.replace(decided, join_type=operator.how)
    plan.join_plans[vertex.id] = decided
    plan.replace_operator(vertex, operator.building(decided.build_input))
    if at_run_time and decided.strategy is not JoinStrategy.BROADCAST:
        vertex.join = AdaptiveJoin(
            buildable=decided.buildable, splittable=operator.join_type.splittable,
            broadcast_threshold=threshold if decided.strategy is JoinStrategy.AUTO else 0)
    sides = join.sides
    if decided.broadcast_input is None:
        return [LogicalEdge(inputs[i], vertex, ShipStrategy.HASH, keys[i],
                            side.partition_type, i) for i, side in enumerate(sides)]
    kept = 1 - decided.broadcast_input
    if vertex.parallelism is None:
        vertex.parallelism = inputs[kept].parallelism or plan.logical.parallelism
    return [LogicalEdge(inputs[i], vertex,
                        ShipStrategy.BROADCAST if i == decided.broadcast_input else side.ship,
                        () if i == decided.broadcast_input else side.keys,
                        side.partition_type, i) for i, side in enumerate(sides)]


def parallelism(plan: Planning) -> None:
    for vertex in plan.nodes.values():      # producers before their consumers
        if vertex.parallelism is None:      # a collect sink keeps its producer's subtasks
            vertex.parallelism = plan.inputs_of(vertex)[0].parallelism \
                if vertex.collect else plan.default_parallelism


def exchanges(plan: Planning) -> None:
    logical = plan.logical
    graph = JobGraph(logical.name, logical.schedule_mode)
    graph.spark_overhead_mb = plan.config.get(options.SPARK_JVM_OVERHEAD)
    graph.job_configuration = job_level(plan.config)
    for vertex in plan.nodes.values():
        graph.add_vertex(vertex)
    graph.join_plans.update(plan.join_plans)
    joined = plan.edges
    plan.edges = [dataclasses.replace(e, source=plan.own(e.source), target=plan.own(e.target),
                                      keys=_whole_row_keys(plan, e))
                  for e in logical.edges] + joined
    for edge in plan.edges:
        ship = edge.ship
        if ship is None:
            ship = ShipStrategy.FORWARD if edge.source.parallelism == edge.target.parallelism \
                else ShipStrategy.REBALANCE
        partition_type = edge.partition_type or (
            PartitionType.PIPELINED if ship is ShipStrategy.FORWARD else plan.exchange)
        graph.connect(edge.source, edge.target, ship, edge.keys, partition_type,
                      edge.target_input)
    plan.graph = graph


def _whole_row_keys(plan: Planning, edge: LogicalEdge) -> tuple[str, ...]:
    """An edge's hash keys; for a distinct of whole rows (``distinct()``), its input's
    columns, which the client must know to partition on them."""
    target = plan.own(edge.target).operator.value
    if edge.keys or edge.ship is not ShipStrategy.HASH or \
            not isinstance(target, DistinctOperator) or target.columns:
        return edge.keys
    schema = plan.schemas.get(edge.source.id)
    if schema is None:
        raise InvalidPipelineError(edge.target.name, "distinct() of whole rows needs its input's "
                                   "columns, which are unknown here (an operator before it "
                                   "returns columns it did not declare)",
                                   "name the columns, distinct('a', 'b'), or declare what the "
                                   "map returns: map(fn, output_schema=pa.schema([...]))")
    return tuple(schema.names)


def pipeline_breakers(plan: Planning) -> None:
    if plan.streaming:
        finish_graph(plan.job_graph, plan.config)
        return
    break_pipelined_cycles(plan.job_graph)


def adaptive(plan: Planning) -> None:
    if plan.adaptive and not plan.streaming and mark_adaptive(plan.job_graph, plan.unset):
        plan.job_graph.schedule_mode = ScheduleMode.LAZY_FROM_SOURCES   # decided once written


def validate(plan: Planning) -> None:
    graph = plan.job_graph
    graph.resolve(plan.default_parallelism)
    graph.validate(options.largest_worker(plan.config), options.default_slot_profile(plan.config))


def chaining(plan: Planning) -> None:
    if plan.config.get(options.OPERATOR_CHAINING):
        plan.graph = chain_operators(plan.job_graph)


PASSES: list[tuple[str, Pass]] = [
    ("bind", bind), ("streaming", streaming), ("local-steps", local_steps), ("schemas", schemas),
    ("estimates", estimates), ("join-strategies", join_strategies),
    ("parallelism", parallelism), ("exchanges", exchanges),
    ("pipeline-breakers", pipeline_breakers), ("adaptive", adaptive),
    ("validate", validate), ("chaining", chaining)]


def compile_plan(logical: LogicalPlan, config: Configuration,
                 after_pass: Callable[[str, Planning], None] | None = None) -> JobGraph:
    """The JobGraph of ``logical`` under ``config``; ``after_pass(name, planning)`` sees
    the plan after each pass (``yarnflow explain --passes``)."""
    adaptive_on = config.get(options.ADAPTIVE_ENABLED)
    plan = Planning(
        logical, config, adaptive_on,
        logical.exchange if logical.exchange is not None else
        PartitionType.BLOCKING if adaptive_on else PartitionType.PIPELINED,
        logical.parallelism or config.get(options.DEFAULT_PARALLELISM))
    for name, run in PASSES:
        run(plan)
        if after_pass is not None:
            after_pass(name, plan)
    return plan.job_graph


def describe(name: str, plan: Planning) -> list[str]:
    """The plan after pass ``name``, a line per node (and per edge once there are
    edges): what a reader needs to see what the pass decided."""
    lines = [f"after {name}:"]
    for vertex in plan.nodes.values():
        operator = type(vertex.operator.value).__name__
        phase = getattr(vertex.operator.value, "phase", None)
        parts = [f"  {vertex.name}: {operator}" + (f" ({phase.value})" if phase else "")]
        if vertex.parallelism is not None:
            parts.append(f"p={vertex.parallelism}")
        schema = plan.schemas.get(vertex.id)
        if schema is not None:
            parts.append("columns=" + ",".join(schema.names))
        estimate = plan.estimates.get(vertex.id)
        if estimate is not None and estimate.rows is not None:
            parts.append(f"rows~{estimate.rows}")
        if vertex.id in plan.join_plans:
            join = plan.join_plans[vertex.id]
            parts.append(f"join={join.strategy.value} build={join.build_input}")
        if vertex.adaptive:
            parts.append("adaptive")
        lines.append(" ".join(parts))
    if plan.graph is not None:
        for edge in plan.graph.edges:
            lines.append(f"  {edge.source.name} -> {edge.target.name}: {edge.ship.name}"
                         + (f"({','.join(edge.keys)})" if edge.keys else "")
                         + f" {edge.partition_type.name}")
    return lines
