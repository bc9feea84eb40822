"""The planner's passes (issue 82) build the JobGraph the one-method planner built, for
every example and TPC-H query, under the configurations that change a plan: adaptive
execution, ONE_PHASE aggregates, chaining off, parallelism 4. Kept while the old path
(``client/planner/legacy.py``) exists."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import FAST
from yarnflow.client.planner.compiler import PASSES, compile_plan
from yarnflow.client.planner.legacy import legacy_job_graph
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import JobGraph

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import skewed_join  # noqa: E402
from tpch import QUERIES  # noqa: E402
from tpch.data import generate  # noqa: E402
from tpch.run import pipeline  # noqa: E402

CONFIGS = {
    "default": [],
    "adaptive": ["execution.batch.adaptive.enabled=true"],
    "one-phase": ["table.optimizer.agg-phase-strategy=ONE_PHASE"],
    "unchained": ["pipeline.operator-chaining.enabled=false"],
    "parallelism-4": ["parallelism.default=4"],
}


def fingerprint(graph: JobGraph) -> dict[str, Any]:
    """Everything of a JobGraph the runtime acts on, by vertex name: what each vertex
    runs (its operators' kinds and steps, a join's build side), its parallelism,
    resources, groups, columns and estimate; each edge's ends, ship strategy, keys and
    partition type; the join plans; the schedule mode."""
    def operators(vertex: Any) -> list[tuple[str, str, int]]:
        value = vertex.operator.value
        chained = getattr(value, "operators", [value])
        return [(type(op).__name__, str(getattr(op, "phase", "")), getattr(op, "build_input", -1))
                for op in chained]
    names = {v.id: v.name for v in graph.vertices.values()}
    return {
        "mode": graph.schedule_mode.name,
        "vertices": {v.name: (operators(v), v.operators, v.parallelism, str(v.resources),
                              v.slot_sharing_group, v.co_location_group, v.adaptive,
                              str(v.schema), str(v.estimate), str(v.join))
                     for v in graph.vertices.values()},
        "edges": sorted((e.source.name, e.target.name, e.ship.name, e.keys,
                         e.partition_type.name, e.target_input, e.source_operator)
                        for e in graph.edges),
        "joins": {names[k]: str(plan) for k, plan in graph.join_plans.items()},
    }


@pytest.fixture(scope="module")
def tpch_data() -> Path:
    return generate(0.1)


def both(p: Any, overrides: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    config = Configuration.load(overrides=[*FAST, *overrides])
    logical = p.logical_plan()
    return (fingerprint(compile_plan(logical, config)),
            fingerprint(legacy_job_graph(logical, config)))


@pytest.mark.parametrize("setting", CONFIGS)
@pytest.mark.parametrize("number", QUERIES)
def test_each_tpch_querys_graph_is_the_one_the_old_planner_built(tpch_data, tmp_path, number,
                                                                  setting):
    passes, old = both(pipeline(number, str(tpch_data), str(tmp_path / "out"), 2),
                       CONFIGS[setting])
    assert passes == old


@pytest.mark.parametrize("setting", CONFIGS)
@pytest.mark.parametrize("strategy", ["auto", "hash", "broadcast"])
def test_the_main_examples_graph_is_the_one_the_old_planner_built(tmp_path, strategy, setting):
    table = pa.table({"InstrumentId": [1, 2], "RIC": ["a", "b"],
                                  "CurrencyId": [7, 7], "Price": [1.0, 2.0]})
    data = tmp_path / "data"
    (data / "currencies").mkdir(parents=True)
    pq.write_table(pa.table(
        {"CurrencyId": [7], "ISOCode": ["EUR"], "ISOExtended": [""]}),
        data / "currencies" / "part-0.parquet")
    p = skewed_join.build(str(data), str(tmp_path / "out"), strategy, instruments_table=table)
    passes, old = both(p, CONFIGS[setting])
    assert passes == old


def test_the_comparison_sees_a_difference(tpch_data, tmp_path):
    """The fingerprint is not blind: another parallelism changes it."""
    two = both(pipeline(3, str(tpch_data), str(tmp_path / "a"), 2), [])[0]
    four = both(pipeline(3, str(tpch_data), str(tmp_path / "b"), 4), [])[0]
    assert two != four


def test_every_pass_runs_in_flinks_order_and_explain_sees_each(tpch_data, tmp_path):
    seen: list[str] = []
    p = pipeline(9, str(tpch_data), str(tmp_path / "out"), 2)
    compile_plan(p.logical_plan(), Configuration.load(overrides=FAST),
                 lambda name, planning: seen.append(name))
    assert seen == [name for name, _ in PASSES]
    assert seen.index("schemas") < seen.index("estimates") < seen.index("join-strategies") \
        < seen.index("exchanges") < seen.index("chaining")
