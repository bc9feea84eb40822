"""The planner's decisions for an unbounded job (``execution.runtime-mode``).

``automatic`` is streaming when any source is unbounded (Kafka without stopping
offsets, a watched directory). A streaming job runs every subtask at once (EAGER)
with PIPELINED exchanges only, and its keyed exchanges route by key group. Each
operator must be able to run on an input without end: a file sink becomes the
exactly-once streaming sink, which commits at checkpoints (so checkpoints must be
on); an operator whose result is final only at the end of its input (a global sort,
an aggregate, a join of two unbounded inputs) is refused here, in one line that
names it and what to use instead. Every operator with state gets a uid, its name,
under which its state is kept in checkpoints and savepoints.
"""
from __future__ import annotations

import copy
from typing import Any

from yarnflow.client.planner.logical import LogicalPlan
from yarnflow.conf import Configuration, options
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.jobgraph import InvalidPipelineError, JobGraph, PartitionType, ScheduleMode
from yarnflow.core.operators.sinks import FileSink
from yarnflow.core.operators.transforms import (FilterOperator, FlatMapOperator, IdentityOperator,
                                                MapOperator, SelectOperator)
from yarnflow.core.streaming.file_sink import StreamingFileSink
from yarnflow.core.streaming.key_groups import check_max_parallelism, default_max_parallelism
from yarnflow.core.streaming.operators import StreamOperator, StreamSource

STATELESS = (MapOperator, FilterOperator, FlatMapOperator, SelectOperator, IdentityOperator)

# what to use instead of an operator that needs the end of its input
ALTERNATIVES = {
    "AggregateOperator": "aggregate per window: .window(keys, yf.tumbling('1 min'), ...)",
    "SortOperator": "sort within a window, or write the stream and sort it in a batch job",
    "RangeSampleOperator": "sort within a window, or write the stream and sort it in a batch job",
    "HashJoinOperator": "join with a bounded table by broadcast (the next issue adds window joins)",
    "DistinctOperator": "deduplicate per window: .window(keys, ...).aggregate([(col, 'count')])",
    "LimitOperator": "limit a bounded read (stopping_offsets='latest')",
    "TopOperator": "take the top N per window",
    "CollectSink": "write the stream to files or Kafka; collect() needs a bounded input",
}


def is_unbounded(operator: Any) -> bool:
    return isinstance(operator, StreamSource) and not operator.bounded


def runtime_mode(logical: LogicalPlan, config: Configuration) -> bool:
    """Whether the job runs as a streaming job."""
    mode = config.get(options.RUNTIME_MODE)
    unbounded = [v for v in logical.vertices if is_unbounded(v.operator.value)]
    streams = any(isinstance(v.operator.value, StreamSource) for v in logical.vertices)
    if mode == "batch" and unbounded:
        raise InvalidPipelineError(unbounded[0].name, "execution.runtime-mode is batch, and "
                                   "this source has no end", "run it as a streaming job "
                                   "(execution.runtime-mode: streaming or automatic), or "
                                   "bound it (stopping_offsets='latest')")
    if mode == "batch" and streams:
        raise InvalidPipelineError(logical.name, "a Kafka or watched source runs only in a "
                                   "streaming job", "set execution.runtime-mode to streaming "
                                   "or automatic")
    return mode == "streaming" or (mode == "automatic" and streams)


def streaming_operator(name: str, operator: Any, checkpoints: bool,
                       settings: FileSystemSettings) -> Any:
    """The operator as a streaming job runs it, with its uid; refused when it cannot."""
    if isinstance(operator, (StreamSource, StreamOperator)):
        if not getattr(operator, "uid", ""):
            operator = copy.copy(operator)
            operator.uid = name
        if isinstance(operator, StreamingFileSink) and not checkpoints:
            raise _needs_checkpoints(name)
        return operator
    if isinstance(operator, FileSink):
        if not checkpoints:
            raise _needs_checkpoints(name)
        sink = StreamingFileSink(operator.committer.uri, operator.format.name,
                                 operator.partition_by, getattr(operator, "time_buckets", None),
                                 uid=name)
        return sink.bound(settings)
    if isinstance(operator, STATELESS):
        return operator
    kind = type(operator).__name__
    raise InvalidPipelineError(
        name, f"{kind} cannot run on an unbounded input: its result is final only once its "
        "input has ended", ALTERNATIVES.get(kind, "run it in a batch job over what the "
                                            "stream wrote"))


def _needs_checkpoints(name: str) -> InvalidPipelineError:
    return InvalidPipelineError(name, "a file sink on an unbounded input makes its files "
                                "visible at checkpoints, and checkpoints are off",
                                "set execution.checkpointing.interval (e.g. -D "
                                "execution.checkpointing.interval=10s)")


def finish_graph(graph: JobGraph, config: Configuration) -> None:
    """Every exchange PIPELINED, every subtask deployed at once, the mode and the key
    groups in the job's own configuration (the JobMaster and a session read them)."""
    for edge in graph.edges:
        edge.partition_type = PartitionType.PIPELINED
    graph.schedule_mode = ScheduleMode.EAGER
    widest = max((v.parallelism or 1 for v in graph.vertices.values()), default=1)
    configured = config.get(options.MAX_PARALLELISM)
    max_parallelism = configured if configured > 0 else default_max_parallelism(widest)
    for vertex in graph.vertices.values():
        try:
            check_max_parallelism(max_parallelism, vertex.parallelism or 1, vertex.name)
        except ValueError as err:
            raise InvalidPipelineError(vertex.name, str(err).split(": ", 1)[1].split(". Fix")[0],
                                       "lower the parallelism or raise pipeline.max-parallelism"
                                       ) from None
    graph.job_configuration = {**graph.job_configuration,
                               "execution.runtime-mode": "streaming",
                               "pipeline.max-parallelism": str(max_parallelism)}

