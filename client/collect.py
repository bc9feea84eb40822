"""A DataSet's rows brought back to the client (Spark's ``collect``/``toPandas``,
Flink's DataSet ``collect``): the pipeline runs with a collect sink after the DataSet,
its subtasks hand their rows to the JobMaster with their FINISHED reports, and the
client fetches the job's result once the job ended, on any target, attached or not.

The sink keeps its producer's subtasks and is fed FORWARD (chained to it), so the
rows come back in the order the DataSet has them: a sorted DataSet's ranges in
order, each range's rows sorted.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from yarnflow.client.context import current_context, execute_pipeline
from yarnflow.client.explain import ExplainResult
from yarnflow.conf import Configuration, options
from yarnflow.core.jobgraph import ShipStrategy
from yarnflow.core.operators.collect import CollectSink

if TYPE_CHECKING:
    from yarnflow.client.pipeline import DataSet


def collect_table(data: "DataSet", name: str, target: str | None,
                  config: Configuration | None) -> pa.Table:
    """Run the DataSet's pipeline and return its rows; under ``yarnflow explain``,
    which runs nothing, an empty table of the columns the plan knows."""
    pipeline = data.pipeline
    context = current_context()
    config = config or (context.config if context is not None else Configuration.load())
    out = data._unary(CollectSink(config.get(options.COLLECT_MAX_RESULT_SIZE)), name,
                      ship=ShipStrategy.FORWARD)
    out.vertex.collect = True           # its parallelism: its producer's (job_graph)
    try:
        handle = execute_pipeline(pipeline, target, config, collect=True)
    finally:
        pipeline._drop(out.vertex)      # the pipeline is the user's again, as it was
    if isinstance(handle, ExplainResult):     # explained, not run
        schema = next((v.schema for v in handle.graph.vertices.values() if v.collect), None)
        return (schema or pa.schema([])).empty_table()
    return table_of(handle.collected())


def table_of(parts: tuple[bytes, ...]) -> pa.Table:
    """One table of the subtasks' Arrow IPC streams, in subtask order."""
    tables = [pa.ipc.open_stream(part).read_all() for part in parts if part]
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="permissive")

