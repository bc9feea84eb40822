"""Operator chaining: the JobGraph's vertices joined by forward edges become one
chained vertex each, run as one task (seed 003; Flink's ``StreamingJobGraphGenerator``
does it when it turns the StreamGraph into the JobGraph).

An edge is chained when it is FORWARD and PIPELINED, both ends have the same
parallelism, slot sharing group and co-location group (and both or neither are
decided at run time), the consumer has that one input, and neither end forbids it:
the consumer must take its input pushed (``ChainingStrategy.ALWAYS``), the producer
must not be ``NEVER``. A BLOCKING edge is a stage boundary and never chained. As in
Flink a chain is a tree: a producer hands each batch to every consumer chained to it,
and any operator of the chain may also feed an edge that leaves it. A chain commits
one output, though (a vertex has one committer): a second sink starts a chain of its own.

The chained vertex keeps its head's id (so a join's plan and its run-time choices stay
keyed as they were), is named as Flink names it (``source -> filter -> map``, a fork as
``source -> (left, right)``), runs a ``ChainedOperator``, and asks for the sum of its
operators' resources, as the shared slot they would have shared does.
"""
from __future__ import annotations

import dataclasses
import functools
import operator

from yarnflow.core.jobgraph import (ChainingStrategy, JobEdge, JobGraph, JobVertex,
                                    PartitionType, ShipStrategy, consumer_key)
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.user_code import UserCode

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
    inputs = len(graph.inputs_of(target))
    if inputs != 1:
        return f"'{target.name}' has {inputs} inputs"
    if strategy_of(source) is ChainingStrategy.NEVER:
        return f"'{source.name}' is never chained"
    if strategy_of(target) is not ChainingStrategy.ALWAYS:
        return f"'{target.name}' starts a chain"
    return None


def chains(graph: JobGraph) -> list[list[JobVertex]]:
    """The graph's vertices as chains, heads in topological order, each head first and
    its members in depth-first order (a member's producer before it)."""
    chainable = {id(e) for e in graph.edges if why_not_chained(graph, e) is None}
    placed: set[str] = set()
    found = []
    for vertex in graph.topological_order():
        if vertex.id in placed:
            continue        # in its producer's chain
        members: list[JobVertex] = []

        def take(member: JobVertex) -> None:
            members.append(member)
            placed.add(member.id)
            for edge in graph.outputs_of(member):
                target = edge.target
                committed = target.committer is not None and any(
                    m.committer is not None for m in members)
                if id(edge) in chainable and target.id not in placed and not committed:
                    take(target)
        take(vertex)
        found.append(members)
    return found


def chain_operators(graph: JobGraph) -> JobGraph:
    """The graph with each chain one vertex (on the client: it reads the operators);
    a graph without chains is returned as is."""
    found = chains(graph)
    if all(len(members) == 1 for members in found):
        return graph
    chained = JobGraph(graph.name, graph.schedule_mode, graph.job_id)
    chained.spark_overhead_mb = graph.spark_overhead_mb
    chained.job_configuration = dict(graph.job_configuration)
    chained.join_plans = dict(graph.join_plans)
    head_of = {member.id: members[0] for members in found for member in members}
    for members in found:
        chained.add_vertex(members[0] if len(members) == 1 else _chained_vertex(graph, members,
                                                                                 head_of))
    for edge in graph.edges:
        source, target = head_of[edge.source.id], head_of[edge.target.id]
        if source is not target:
            chained.connect(chained.vertices[source.id], chained.vertices[target.id], edge.ship,
                            edge.keys, edge.partition_type, edge.target_input,
                            edge.source.name if source is not edge.source else "")
    return chained


def _chained_vertex(graph: JobGraph, members: list[JobVertex],
                    head_of: dict[str, JobVertex]) -> JobVertex:
    """One vertex for a chain's members: the head's, running them all."""
    from yarnflow.core.operators.chain import ChainedOperator
    index = {m.id: i for i, m in enumerate(members)}
    parents = [-1] + [index[graph.inputs_of(m)[0].source.id] for m in members[1:]]
    # which operator feeds each edge that leaves the chain, by the result the run time
    # names it with (consumer vertex id and input index)
    routes = {consumer_key(head_of[e.target.id].id, e.target_input): index[m.id]
              for m in members for e in graph.outputs_of(m) if e.target.id not in index}
    names = [m.name for m in members]
    chain = ChainedOperator([m.operator.value for m in members], names, parents, routes)
    last = members[-1]
    committers = [m.committer for m in members if m.committer is not None]
    return dataclasses.replace(
        members[0], name=chain.display_name(), operator=UserCode.of(chain),
        resources=_summed([m.resources for m in members]),
        uses_spark=any(m.uses_spark for m in members),
        committer=committers[0] if committers else None,
        collect=any(m.collect for m in members),
        estimate=last.estimate, schema=last.schema, operator_names=tuple(names))


def _summed(specs: list[ResourceSpec | None]) -> ResourceSpec | None:
    given = [s for s in specs if s is not None]
    return functools.reduce(operator.add, given) if given else None


def head_operator(vertex: JobVertex) -> object:
    """The operator that reads the vertex's inputs (on the client): the head of its
    chain, or its one operator."""
    from yarnflow.core.operators.chain import ChainedOperator
    operator = vertex.operator.value
    return operator.head if isinstance(operator, ChainedOperator) else operator
