"""A JobMaster's settings, read once per job where it starts (Flink's
``JobMasterConfiguration``).

A session's job carries job-level options (``conf/job_level.py``) over the session's
own; the JobMaster builds one settings object from that merged configuration, and its
scheduler, SlotPool, restart strategy, speculation, blocklist and split assigners take
the part they need. The heartbeat check and the speculation check run every second or
so: they read a field, not a parsed option.
"""
from __future__ import annotations

import os
import posixpath
import tempfile
from dataclasses import dataclass

from yarnflow.appmaster.jobmaster.checkpoint.coordinator import CheckpointSettings
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.decider import AutoParallelism
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.join_decider import SkewSettings
from yarnflow.conf import Configuration, options
from yarnflow.conf.streaming_options import checkpoints_directory
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.slot_memory import SlotMemory


@dataclass(frozen=True)
class RestartSettings:
    """``restart-strategy.*``: which strategy, and each strategy's own numbers."""
    kind: str
    fixed_attempts: int
    fixed_delay: float
    rate_max_failures: int
    rate_interval: float
    rate_delay: float
    exp_initial_backoff: float
    exp_max_backoff: float
    exp_multiplier: float
    exp_reset_threshold: float
    exp_jitter: float
    exp_attempts: int

    @classmethod
    def of(cls, config: Configuration) -> "RestartSettings":
        return cls(config.get(options.RESTART_STRATEGY),
                   config.get(options.FIXED_DELAY_ATTEMPTS), config.get(options.FIXED_DELAY_DELAY),
                   config.get(options.FAILURE_RATE_MAX), config.get(options.FAILURE_RATE_INTERVAL),
                   config.get(options.FAILURE_RATE_DELAY),
                   config.get(options.EXP_INITIAL_BACKOFF), config.get(options.EXP_MAX_BACKOFF),
                   config.get(options.EXP_MULTIPLIER), config.get(options.EXP_RESET_THRESHOLD),
                   config.get(options.EXP_JITTER), config.get(options.EXP_ATTEMPTS))


@dataclass(frozen=True)
class SlowTaskSettings:
    """``slow-task-detector.execution-time.baseline-*``."""
    ratio: float
    multiplier: float
    lower_bound: float

    @classmethod
    def of(cls, config: Configuration) -> "SlowTaskSettings":
        return cls(config.get(options.SLOW_TASK_BASELINE_RATIO),
                   config.get(options.SLOW_TASK_BASELINE_MULTIPLIER),
                   config.get(options.SLOW_TASK_BASELINE_LOWER_BOUND))


@dataclass(frozen=True)
class SpeculationSettings:
    """``execution.batch.speculative.*``."""
    enabled: bool
    max_concurrent: int
    check_interval: float
    detector: SlowTaskSettings

    @classmethod
    def of(cls, config: Configuration) -> "SpeculationSettings":
        return cls(config.get(options.SPECULATIVE_ENABLED),
                   config.get(options.SPECULATIVE_MAX_CONCURRENT),
                   config.get(options.SLOW_TASK_CHECK_INTERVAL), SlowTaskSettings.of(config))


@dataclass(frozen=True)
class BlockerSettings:
    """When a job asks to block a host: ``threshold`` events there within ``window``
    (task failures, or subtasks found slow) block it for ``timeout``."""
    enabled: bool
    timeout: float
    threshold: int
    window: float

    @classmethod
    def failures(cls, config: Configuration) -> "BlockerSettings":
        """``cluster.resource-blocklist.*``."""
        return cls(config.get(options.BLOCKLIST_ENABLED), config.get(options.BLOCKLIST_ITEM_TIMEOUT),
                   config.get(options.BLOCKLIST_TASK_FAILURES),
                   config.get(options.BLOCKLIST_FAILURE_WINDOW))

    @classmethod
    def slow(cls, config: Configuration) -> "BlockerSettings":
        """``execution.batch.speculative.block-slow-node-*``."""
        duration = config.get(options.SPECULATIVE_BLOCK_SLOW_NODE_DURATION)
        return cls(duration > 0, duration, config.get(options.SPECULATIVE_BLOCK_SLOW_NODE_AFTER),
                   config.get(options.BLOCKLIST_FAILURE_WINDOW))


@dataclass(frozen=True)
class SplitSettings:
    """``pipeline.source.split-size``, ``source.locality-wait``, ``source.fair-share-wait``."""
    split_size: int
    locality_wait: float
    fair_share_wait: float

    @classmethod
    def of(cls, config: Configuration) -> "SplitSettings":
        return cls(config.get(options.SOURCE_SPLIT_SIZE), config.get(options.SOURCE_LOCALITY_WAIT),
                   config.get(options.SOURCE_FAIR_SHARE_WAIT))


@dataclass(frozen=True)
class StorageSettings:
    """Where a job's BLOCKING results, event log and offloaded deployment parts go."""
    filesystem: FileSystemSettings
    partition_store_dir: str      # as configured or derived, not yet resolved
    recovery: bool                # job recovery: the event log is written
    store: str                    # "dfs" or "local"
    offload_min_size: int

    @classmethod
    def of(cls, config: Configuration) -> "StorageSettings":
        recovery = config.get(options.JOB_RECOVERY_ENABLED)
        return cls(options.filesystem_settings(config), partition_store_dir(config), recovery,
                   config.get(options.PARTITION_STORE) or ("dfs" if recovery else "local"),
                   config.get(options.BLOB_OFFLOAD_MINSIZE))

    @property
    def root(self) -> str:
        """The partition store's directory as a full URI, without a trailing slash."""
        return self.filesystem.resolve(self.partition_store_dir).rstrip("/")


def partition_store_dir(config: Configuration) -> str:
    """``execution.batch.partition-store.dir``, else ``partitions`` beside the job
    history (on the cluster's file system on YARN), else under the temp directory."""
    configured = config.get(options.PARTITION_STORE_DIR)
    if configured:
        return configured
    history = config.get(options.SESSION_HISTORY_DIR)
    if history:
        return f"{posixpath.dirname(history.rstrip('/'))}/partitions"
    return os.path.join(config.get(options.TMP_DIRS) or tempfile.gettempdir(),
                        "yarnflow-partitions")


@dataclass(frozen=True)
class AdaptiveSettings:
    """``execution.batch.adaptive.*`` and the skewed join's options, for the vertices
    whose parallelism is decided at run time."""
    parallelism: AutoParallelism
    skew: SkewSettings
    slot_memory: SlotMemory

    @classmethod
    def of(cls, config: Configuration) -> "AdaptiveSettings":
        return cls(AutoParallelism(config.get(options.ADAPTIVE_MIN_PARALLELISM),
                                   config.get(options.ADAPTIVE_MAX_PARALLELISM),
                                   config.get(options.ADAPTIVE_AVG_DATA_VOLUME)),
                   SkewSettings(config.get(options.SKEWED_JOIN_STRATEGY) == "auto",
                                config.get(options.SKEWED_JOIN_FACTOR),
                                config.get(options.SKEWED_JOIN_THRESHOLD)),
                   options.slot_memory(config))


def checkpoint_settings(config: Configuration) -> CheckpointSettings:
    """``execution.checkpointing.*``; the directory as a full URI on the cluster's file
    system (the client fills in the default on YARN; locally ~/.yarnflow/checkpoints)."""
    directory = checkpoints_directory(config.get(options.CHECKPOINTS_DIR))
    return CheckpointSettings(
        config.get(options.CHECKPOINT_INTERVAL), config.get(options.CHECKPOINT_TIMEOUT),
        config.get(options.CHECKPOINT_MIN_PAUSE), config.get(options.CHECKPOINT_MAX_CONCURRENT),
        config.get(options.CHECKPOINT_TOLERABLE_FAILURES),
        options.filesystem_settings(config).resolve(directory).rstrip("/"),
        config.get(options.CHECKPOINTS_RETAINED))


@dataclass(frozen=True)
class StreamingSettings:
    """An unbounded job's: whether it is one (the client resolved ``automatic``), its
    key groups (-1: derived from its parallelism), and its checkpoints."""
    enabled: bool
    max_parallelism: int
    checkpoints: CheckpointSettings
    savepoints_dir: str          # state.savepoints.dir
    savepoint_path: str          # execution.savepoint.path: what the job starts from

    @classmethod
    def of(cls, config: Configuration) -> "StreamingSettings":
        return cls(config.get(options.RUNTIME_MODE) == "streaming",
                   config.get(options.MAX_PARALLELISM), checkpoint_settings(config),
                   config.get(options.SAVEPOINTS_DIR), config.get(options.SAVEPOINT_PATH))


@dataclass(frozen=True)
class JobMasterSettings:
    heartbeat_interval: float
    heartbeat_timeout: float
    rpc_timeout: float
    slot_idle_timeout: float
    slot_request_timeout: float
    default_slot: ResourceSpec
    collect_max_result_size: int
    batch_rows: int
    failover_strategy: str
    upstream_failure_grace: float
    job_cancel_timeout: float
    task_cancel_timeout: float
    restart: RestartSettings
    speculation: SpeculationSettings
    failure_blocker: BlockerSettings
    slow_blocker: BlockerSettings
    splits: SplitSettings
    storage: StorageSettings
    adaptive: AdaptiveSettings
    streaming: StreamingSettings

    @classmethod
    def of(cls, config: Configuration) -> "JobMasterSettings":
        """``config``: the cluster's configuration with the job's own job-level options."""
        return cls(
            heartbeat_interval=config.get(options.HEARTBEAT_INTERVAL),
            heartbeat_timeout=config.get(options.HEARTBEAT_TIMEOUT),
            rpc_timeout=config.get(options.RPC_ASK_TIMEOUT),
            slot_idle_timeout=config.get(options.SLOT_IDLE_TIMEOUT),
            slot_request_timeout=config.get(options.SLOT_REQUEST_TIMEOUT),
            default_slot=options.default_slot_profile(config),
            collect_max_result_size=config.get(options.COLLECT_MAX_RESULT_SIZE),
            batch_rows=config.get(options.BATCH_ROWS),
            failover_strategy=config.get(options.FAILOVER_STRATEGY),
            upstream_failure_grace=config.get(options.UPSTREAM_FAILURE_GRACE),
            job_cancel_timeout=config.get(options.JOB_CANCEL_TIMEOUT),
            task_cancel_timeout=config.get(options.TASK_CANCEL_TIMEOUT),
            restart=RestartSettings.of(config),
            speculation=SpeculationSettings.of(config),
            failure_blocker=BlockerSettings.failures(config),
            slow_blocker=BlockerSettings.slow(config),
            splits=SplitSettings.of(config),
            storage=StorageSettings.of(config),
            adaptive=AdaptiveSettings.of(config),
            streaming=StreamingSettings.of(config))
