from __future__ import annotations

import pyarrow as pa
import pytest

from yarnflow.appmaster.jobmaster.executiongraph import (ExecutionGraph, ExecutionState,
                                                         IllegalStateTransition)
from yarnflow.core.jobgraph import JobGraph, JobVertex, ShipStrategy
from yarnflow.core.operators import MapOperator, TableSource
from yarnflow.core.user_code import UserCode


def _graph(p: int) -> ExecutionGraph:
    graph = JobGraph("g")
    src = graph.add_vertex(JobVertex("src", UserCode.of(TableSource(pa.table({"x": [1]}))), p, num_inputs=0))
    dst = graph.add_vertex(JobVertex("dst", UserCode.of(MapOperator(lambda b: b, "m")), p, num_inputs=1))
    graph.connect(src, dst, ShipStrategy.REBALANCE)
    return ExecutionGraph(graph.resolve(1))


def test_all_to_all_is_one_shared_consumed_partition_group():
    eg = _graph(50)
    consumers = [v for v in eg.job_vertices.values() if v.name == "dst"][0].task_vertices
    groups = {id(v.consumed[0]) for v in consumers}
    assert len(groups) == 1, "an ALL_TO_ALL edge must not become N x M edge objects"
    assert len(consumers[0].consumed[0]) == 50


def test_execution_state_machine_refuses_illegal_transitions():
    execution = next(_graph(1).current_executions())
    execution.transition(ExecutionState.SCHEDULED)
    with pytest.raises(IllegalStateTransition, match="SCHEDULED -> FINISHED is not allowed"):
        execution.transition(ExecutionState.FINISHED)
    execution.transition(ExecutionState.CANCELED)
    with pytest.raises(IllegalStateTransition):
        execution.transition(ExecutionState.RUNNING)
