"""Operator chaining: the JobGraph's vertices joined by forward edges become one
chained vertex each, run as one task (seed 003; Flink's ``StreamingJobGraphGenerator``
does it when it turns the StreamGraph into the JobGraph).

An edge is chained when it is FORWARD and PIPELINED, both ends have the same
parallelism, slot sharing group and co-location group (and both or neither are
decided at run time), the consumer has that one input, the producer that one output,
and neither end forbids it: the consumer must take its input pushed
(``ChainingStrategy.ALWAYS``), the producer must not be ``NEVER``. A BLOCKING edge is
a stage boundary and never chained. A producer with several consumers keeps its
output edges as they are: a chain here is a line of operators, not Flink's tree.

The chained vertex keeps its head's id (so a join's plan and its run-time choices stay
keyed as they were), is named as Flink names it (``source -> filter -> map``), runs a
``ChainedOperator``, and asks for the sum of its operators' resources, as the shared
slot they would have shared does.
"""
from __future__ import annotations

import dataclasses
import functools
import operator

from yarnflow.core.jobgraph import (ChainingStrategy, JobEdge, JobGraph, JobVertex,
                                    PartitionType, ShipStrategy)
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.user_code import UserCode

CHAIN_SEPARATOR = " -> "


def strategy_of(vertex: JobVertex) -> ChainingStrategy:
    """The stricter of the operator's own strategy and the user's setting."""
    own = getattr(vertex.operator.value, "chaining", ChainingStrategy.HEAD)
    return max(own, vertex.chaining) if vertex.chaining is not None else own


def why_not_chained(graph: JobGraph, edge: JobEdge) -> str | None:
    """Why ``edge`` does not join its ends into one chain; None when it does."""
    source, target = edge.source, edge.target
    if edge.ship is not ShipStrategy.FORWARD:
        return f"{edge.ship.name} edge"
    if edge.partition_type is not PartitionType.PIPELINED:
        return "BLOCKING edge"
    if source.parallelism != target.parallelism:
        return f"parallelism {source.parallelism} to {target.parallelism}"
    if source.slot_sharing_group != target.slot_sharing_group:
        return "another slot sharing group"
    if source.co_location_group != target.co_location_group:
        return "another co-location group"
    if source.adaptive != target.adaptive:
        return "one end's parallelism decided at run time"
    inputs, outputs = len(graph.inputs_of(target)), len(graph.outputs_of(source))
    if inputs != 1:
        return f"'{target.name}' has {inputs} inputs"
    if outputs != 1:
        return f"'{source.name}' has {outputs} outputs"
    if strategy_of(source) is ChainingStrategy.NEVER:
        return f"'{source.name}' is never chained"
    if strategy_of(target) is not ChainingStrategy.ALWAYS:
        return f"'{target.name}' starts a chain"
    return None


def chains(graph: JobGraph) -> list[list[JobVertex]]:
    """The graph's vertices as chains, each head first, heads in topological order."""
    chained = {id(e) for e in graph.edges if why_not_chained(graph, e) is None}
    found = []
    for vertex in graph.topological_order():
        if any(id(e) in chained for e in graph.inputs_of(vertex)):
            continue        # in its producer's chain
        line = [vertex]
        while True:
            outputs = [e for e in graph.outputs_of(line[-1]) if id(e) in chained]
            if not outputs:
                break
            line.append(outputs[0].target)
        found.append(line)
    return found


def chain_operators(graph: JobGraph) -> JobGraph:
    """The graph with each chain one vertex (on the client: it reads the operators);
    a graph without chains is returned as is."""
    lines = chains(graph)
    if all(len(line) == 1 for line in lines):
        return graph
    from yarnflow.core.operators.chain import ChainedOperator
    chained = JobGraph(graph.name, graph.schedule_mode, graph.job_id)
    chained.spark_overhead_mb = graph.spark_overhead_mb
    chained.job_configuration = dict(graph.job_configuration)
    chained.join_plans = dict(graph.join_plans)
    vertex_of: dict[str, JobVertex] = {}
    for line in lines:
        if len(line) == 1:
            vertex = line[0]
        else:
            head, tail = line[0], line[-1]
            chain = ChainedOperator([v.operator.value for v in line], [v.name for v in line])
            vertex = dataclasses.replace(
                head, name=CHAIN_SEPARATOR.join(v.name for v in line),
                operator=UserCode.of(chain), resources=_summed([v.resources for v in line]),
                uses_spark=any(v.uses_spark for v in line), committer=tail.committer,
                estimate=tail.estimate, schema=tail.schema,
                operator_names=tuple(v.name for v in line))
        chained.add_vertex(vertex)
        for member in line:
            vertex_of[member.id] = vertex
    for edge in graph.edges:
        if vertex_of[edge.source.id] is not vertex_of[edge.target.id]:
            chained.connect(vertex_of[edge.source.id], vertex_of[edge.target.id], edge.ship,
                            edge.keys, edge.partition_type, edge.target_input)
    return chained


def _summed(specs: list[ResourceSpec | None]) -> ResourceSpec | None:
    given = [s for s in specs if s is not None]
    return functools.reduce(operator.add, given) if given else None


def head_operator(vertex: JobVertex) -> object:
    """The operator that reads the vertex's inputs (on the client): the head of its
    chain, or its one operator."""
    from yarnflow.core.operators.chain import ChainedOperator
    operator = vertex.operator.value
    return operator.head if isinstance(operator, ChainedOperator) else operator
