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
from yarnflow.conf.streaming_options import checkpoints_directory
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.jobgraph import InvalidPipelineError, JobGraph, PartitionType, ScheduleMode
from yarnflow.core.operators.sinks import FileSink
from yarnflow.core.operators.transforms import (FilterOperator, FlatMapOperator, IdentityOperator,
                                                MapOperator, SelectOperator)
from yarnflow.core.streaming.file_sink import StreamingFileSink
from yarnflow.core.streaming.part_files import RollingPolicy
from yarnflow.core.streaming.key_groups import check_max_parallelism, default_max_parallelism
from yarnflow.core.operators.relational import UnionOperator
from yarnflow.core.streaming.operators import StreamOperator, StreamSource, StreamUnion

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


def needs_a_stream(operator: Any) -> str:
    """Why ``operator`` cannot run in a batch job ('' when it can): a stream operator
    with no batch form of its own (a keyed process function; a Kafka sink has one)."""
    if isinstance(operator, StreamOperator) and type(operator).open is StreamOperator.open:
        return (f"{type(operator).__name__} runs only in a streaming job, and every source "
                "of this one is bounded")
    return ""


def rolling_policy(config: Configuration) -> RollingPolicy:
    """A streaming file sink's part files close at every checkpoint, and by these."""
    return RollingPolicy(config.get(options.ROLLING_FILE_SIZE),
                         int(config.get(options.ROLLING_ROLLOVER_INTERVAL) * 1000),
                         int(config.get(options.ROLLING_INACTIVITY_INTERVAL) * 1000))


def streaming_operator(name: str, operator: Any, checkpoints: bool,
                       settings: FileSystemSettings, buffer_timeout: float,
                       rolling: RollingPolicy = RollingPolicy()) -> Any:
    """The operator as a streaming job runs it, with its uid; refused when it cannot."""
    if isinstance(operator, (StreamSource, StreamOperator)):
        operator = copy.copy(operator)
        operator.uid = operator.uid or name
        if isinstance(operator, StreamSource):
            operator.buffer_timeout_s = buffer_timeout
        if isinstance(operator, StreamingFileSink) and not checkpoints:
            raise _needs_checkpoints(name)
        return operator
    if isinstance(operator, FileSink):
        if not checkpoints:
            raise _needs_checkpoints(name)
        sink = StreamingFileSink(operator.committer.uri, operator.format.name,
                                 operator.partition_by, getattr(operator, "time_buckets", None),
                                 rolling=rolling, uid=name)
        return sink.bound(settings)
    if isinstance(operator, STATELESS):
        return operator
    if isinstance(operator, UnionOperator):
        union = StreamUnion(operator.num_inputs)
        union.uid = name
        return union
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



def check_streaming_submission(graph: JobGraph, config: Configuration) -> None:
    """Refused here, at submission, rather than failing the job once it runs: a
    ``state.checkpoints.dir`` that cannot be written, and a savepoint to start from that
    has state for an operator the job does not have."""
    if graph.job_configuration.get("execution.runtime-mode") != "streaming":
        return
    from yarnflow.client.filesystems import filesystem_settings
    from yarnflow.core.fs.opening import open_filesystem
    settings = filesystem_settings(config)
    savepoint = config.get(options.SAVEPOINT_PATH)
    if savepoint:
        _check_savepoint(graph, settings.resolve(savepoint), settings,
                         config.get(options.SAVEPOINT_IGNORE_UNCLAIMED))
    uri = settings.resolve(checkpoints_directory(config.get(options.CHECKPOINTS_DIR)))
    try:
        fs = open_filesystem(uri, settings)
        fs.check_writable(uri)
        fs.mkdirs(uri)
    except OSError as err:
        raise InvalidPipelineError(graph.name, f"state.checkpoints.dir {uri} cannot be "
                                   f"written ({err})", "name a directory this user may write "
                                   "on the cluster's file system") from None


def uids_of(graph: JobGraph) -> set[str]:
    """The uids of the job's operators that keep state."""
    found = set()
    for vertex in graph.vertices.values():
        operator = vertex.operator.value
        for part in getattr(operator, "operators", [operator]):
            if isinstance(part, (StreamSource, StreamOperator)) and part.uid:
                found.add(part.uid)
    return found


def _check_savepoint(graph: JobGraph, location: str, settings: FileSystemSettings,
                     ignore_unclaimed: bool) -> None:
    from yarnflow.core.fs.opening import open_filesystem
    from yarnflow.core.streaming.checkpoint_metadata import read_uids
    try:
        uids = read_uids(open_filesystem(location, settings), location)
    except (OSError, ValueError) as err:
        raise InvalidPipelineError(graph.name, f"the savepoint {location} cannot be read "
                                   f"({err})", "name a savepoint or retained checkpoint "
                                   "directory (the one holding _metadata)") from None
    unclaimed = sorted(uids - uids_of(graph))
    if unclaimed and not ignore_unclaimed:
        raise InvalidPipelineError(graph.name, f"the savepoint {location} has state for "
                                   f"operator uid '{unclaimed[0]}', which this job does not have",
                                   "give that operator its uid back (uid=...), or start with "
                                   "--allow-non-restored-state to drop its state")
