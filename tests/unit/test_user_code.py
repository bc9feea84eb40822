"""User code in the model (core/user_code.py): the object where the pipeline built it,
bytes elsewhere, and loaded only on purpose."""
from __future__ import annotations

import pyarrow as pa
import pytest

from yarnflow.core.operators import MapOperator, TableSource
from yarnflow.core.user_code import NotLoaded, UserCode
from yarnflow.rpc.codec import as_received, jobgraph_as_received, jobgraph_to_proto
from yarnflow.core.jobgraph import JobGraph, JobVertex


def test_the_object_where_it_was_built_and_bytes_elsewhere():
    source = TableSource(pa.table({"x": [1, 2]}))
    built = UserCode.of(source)
    assert built.loaded and built.value is source
    received: UserCode[TableSource] = UserCode.received(built.serialized())
    assert not received.loaded
    with pytest.raises(NotLoaded, match="runs only where it is loaded"):
        received.value
    loaded = received.load()
    assert loaded.table.equals(source.table) and received.value is loaded
    assert received.serialized() == built.serialized()   # the bytes it came as, not re-pickled


def test_an_object_built_here_is_pickled_as_it_is_when_sent():
    """The planner changes a join's build side after the vertex is made."""
    op = MapOperator(lambda b: b, "m")
    code = UserCode.of(op)
    op.name = "changed"
    assert UserCode.received(code.serialized()).load().name == "changed"
    pickled = UserCode.pickled(op)
    op.name = "later"
    assert UserCode.received(pickled.serialized()).load().name == "changed"


def test_the_master_holds_the_graph_as_bytes_and_loads_nothing():
    graph = JobGraph("g")
    graph.add_vertex(JobVertex("src", UserCode.of(TableSource(pa.table({"x": [1]}))), 1))
    for held in (as_received(graph), jobgraph_as_received(jobgraph_to_proto(graph).SerializeToString())):
        (vertex,) = held.vertices.values()
        assert not vertex.operator.loaded
