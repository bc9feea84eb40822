"""Options of unbounded pipelines: runtime mode, checkpoints, state (Flink's names)."""
from __future__ import annotations

from yarnflow.conf.option import option as _option, section as _section
from yarnflow.conf.parsers import (choice as _choice, max_parallelism as _max_parallelism,
                                   nonneg_int as _nonneg_int, pos_int as _pos_int, text as _str)
from yarnflow.core.units import parse_bool, parse_bytes, parse_duration

_section("Streaming and checkpoints")   # unbounded pipelines; Flink's names
RUNTIME_MODE = _option(
    "execution.runtime-mode", _choice("automatic", "streaming", "batch"), "automatic",
    "streaming: every task runs at once (EAGER) with pipelined exchanges and checkpoints; batch: bounded inputs only; automatic: streaming when any source is unbounded.")
BUFFER_TIMEOUT = _option(
    "execution.buffer-timeout", parse_duration, 0.1,
    "In a streaming job, how long a partly filled batch waits for more rows before it is sent on (latency against per-batch cost).")
CHECKPOINT_INTERVAL = _option(
    "execution.checkpointing.interval", parse_duration, 0.0,
    "How often a streaming job's CheckpointCoordinator triggers a checkpoint; 0 disables checkpoints (and with them exactly-once output and recovery without replaying from the start).")
CHECKPOINT_TIMEOUT = _option(
    "execution.checkpointing.timeout", parse_duration, 600.0,
    "A checkpoint not acknowledged by every task this long after its trigger is aborted.")
CHECKPOINT_MIN_PAUSE = _option(
    "execution.checkpointing.min-pause", parse_duration, 0.0,
    "Least time between the end of one checkpoint and the trigger of the next (more than 0 allows one checkpoint at a time).")
CHECKPOINT_MAX_CONCURRENT = _option(
    "execution.checkpointing.max-concurrent-checkpoints", _pos_int, 1,
    "Checkpoints that may be in progress at once.")
CHECKPOINT_TOLERABLE_FAILURES = _option(
    "execution.checkpointing.tolerable-failed-checkpoints", _nonneg_int, 0,
    "Checkpoints in a row that may fail (time out, be declined) before the job fails over; a completed one resets the count.")
CHECKPOINTS_DIR = _option(
    "state.checkpoints.dir", _str, "",
    "Where checkpoints are written, on the cluster's file system (a path or URL); empty: .yarnflow/checkpoints in the user's home directory there (on local, ~/.yarnflow/checkpoints).")
CHECKPOINTS_RETAINED = _option(
    "state.checkpoints.num-retained", _pos_int, 1,
    "Completed checkpoints kept; older ones are deleted once a newer one completes.")
MAX_PARALLELISM = _option(
    "pipeline.max-parallelism", _max_parallelism, -1,
    "Key groups of keyed state: the highest parallelism a keyed operator can ever be restored at; -1: 1.5 × parallelism rounded up to a power of two, at least 128.")
PARTITION_DISCOVERY_INTERVAL = _option(
    "source.kafka.partition-discovery.interval", parse_duration, 300.0,
    "How often a Kafka source subtask looks for partitions added to its topics (Flink's partition.discovery.interval.ms); new ones are read from their start.")
SOURCE_DESERIALIZATION_ERRORS = _option(
    "source.deserialization.errors", _choice("fail", "skip"), "fail",
    "A record a source cannot parse: fail the job naming its partition and offset, or skip and count it.")


def checkpoints_directory(configured: str) -> str:
    """``state.checkpoints.dir`` as given, else this machine's ~/.yarnflow/checkpoints (a
    YARN target fills in the user's directory on the cluster before that)."""
    import os
    return configured or os.path.join(os.path.expanduser("~"), ".yarnflow", "checkpoints")
SAVEPOINTS_DIR = _option(
    "state.savepoints.dir", _str, "",
    "Where `yarnflow savepoint` and `yarnflow stop` write a savepoint when the command names no directory.")
SAVEPOINT_PATH = _option(
    "execution.savepoint.path", _str, "",
    "A savepoint (or retained checkpoint) the job starts from (`yarnflow run --from-savepoint`).")
SAVEPOINT_IGNORE_UNCLAIMED = _option(
    "execution.savepoint.ignore-unclaimed-state", parse_bool, False,
    "Start from a savepoint that has state for operators the job no longer has (`--allow-non-restored-state`); that state is dropped.")
ROLLING_FILE_SIZE = _option(
    "sink.rolling-policy.file-size", parse_bytes, 128 << 20,
    "A streaming file sink's in-progress part file closes at this size, besides at every checkpoint (Flink's filesystem sink option).")
ROLLING_ROLLOVER_INTERVAL = _option(
    "sink.rolling-policy.rollover-interval", parse_duration, 1800.0,
    "... or once it has been open this long (0: never); it becomes visible at the next checkpoint.")
ROLLING_INACTIVITY_INTERVAL = _option(
    "sink.rolling-policy.inactivity-interval", parse_duration, 1800.0,
    "... or once no row came to it this long (0: never), so a quiet bucket does not hold an open file.")
