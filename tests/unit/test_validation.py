"""Every invalid pipeline gets an error naming the vertex and the fix."""
from __future__ import annotations

import pyarrow as pa
import pytest

import yarnflow.client as yf
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import InvalidPipelineError, JobGraph, JobVertex, ShipStrategy
from yarnflow.core.operators import MapOperator
from yarnflow.core.user_code import UserCode

TABLE = pa.table({"k": [1, 2, 3], "v": [1.0, 2.0, 3.0]})


def test_cycle_is_refused_naming_a_vertex_on_it():
    graph = JobGraph("cyclic")
    a = graph.add_vertex(JobVertex("a", UserCode.of(MapOperator(lambda b: b, "a")), 1, num_inputs=1))
    b = graph.add_vertex(JobVertex("b", UserCode.of(MapOperator(lambda b: b, "b")), 1, num_inputs=1))
    graph.connect(a, b, ShipStrategy.FORWARD)
    graph.connect(b, a, ShipStrategy.FORWARD)
    with pytest.raises(InvalidPipelineError, match=r"vertex '(a|b)'.*cycle.*Fix: remove the edge"):
        graph.resolve(1)


def test_co_location_without_slot_sharing_is_refused():
    p = yf.Pipeline(parallelism=2)
    src = p.from_arrow(TABLE, name="src")
    src.map(lambda b: b, name="head").co_location_group("g").slot_sharing_group("one") \
       .map(lambda b: b, name="tail").co_location_group("g").slot_sharing_group("two")
    with pytest.raises(InvalidPipelineError,
                       match=r"vertex 'tail'.*co-location group 'g' needs slot sharing.*Fix: put "
                             r"every co-located operator in the same slot sharing group"):
        p.job_graph()


def test_co_located_vertices_of_different_parallelism_are_refused():
    p = yf.Pipeline(parallelism=2)
    head = p.from_arrow(TABLE).map(lambda b: b, name="head").co_location_group("g")
    head.rebalance().map(lambda b: b, name="tail").co_location_group("g").set_parallelism(3)
    with pytest.raises(InvalidPipelineError, match=r"vertex 'tail'.*equal parallelism.*Fix"):
        p.job_graph()


def test_forward_edge_between_different_parallelism_is_refused():
    p = yf.Pipeline(parallelism=2)
    p.from_arrow(TABLE, name="src").forward().map(lambda b: b, name="wide").set_parallelism(4)
    with pytest.raises(InvalidPipelineError,
                       match=r"vertex 'wide'.*FORWARD edge from 'src'.*Fix: .*rebalance"):
        p.job_graph()


def test_implicit_edge_between_different_parallelism_becomes_rebalance():
    p = yf.Pipeline(parallelism=2)
    p.from_arrow(TABLE, name="src").map(lambda b: b, name="wide").set_parallelism(4)
    graph = p.job_graph()
    assert graph.edges[0].ship is ShipStrategy.REBALANCE


def test_resource_spec_larger_than_the_largest_container_is_refused():
    p = yf.Pipeline()
    p.from_arrow(TABLE).map(lambda b: b, name="huge").resources(yf.ResourceSpec(64, "512g"))
    conf = Configuration.load(overrides=["resourcemanager.max-worker.cpu=8",
                                         "resourcemanager.max-worker.memory=16g"])
    with pytest.raises(InvalidPipelineError, match=r"vertex .*needs ResourceSpec\(cpu=64.*more "
                       r"than the largest container.*Fix: lower the operators' ResourceSpec"):
        p.job_graph(conf)


def test_slot_sharing_group_is_inherited_when_inputs_agree_else_default():
    p = yf.Pipeline(parallelism=1)
    left = p.from_arrow(TABLE, name="left").slot_sharing_group("x")
    right = p.from_arrow(TABLE, name="right").slot_sharing_group("y")
    inherited = left.map(lambda b: b, name="inherits")
    inherited.join(right, on="k", name="mixed")
    graph = p.job_graph()
    assert graph.vertex_running("inherits").slot_sharing_group == "x"   # chained to left
    assert graph.vertex_running("mixed").slot_sharing_group == "default"


def test_a_shared_slot_needs_the_sum_of_its_operators_specs():
    p = yf.Pipeline()
    p.from_arrow(TABLE).resources(yf.ResourceSpec(1, "1g")) \
     .map(lambda b: b).resources(yf.ResourceSpec(2, "3g"))
    graph = p.job_graph()
    assert graph.slot_profile("default", yf.ResourceSpec(1, 1024)) == yf.ResourceSpec(3, "4g")
