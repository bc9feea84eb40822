"""A TaskExecutor's settings, read once from its configuration where it starts
(Flink's ``TaskManagerConfiguration``).

Every option a TaskExecutor uses is parsed here, when the process starts, into frozen
fields: the heartbeat path and the task lifecycle read attributes, never a raw
value, and the code below the runner takes the settings it needs, not the whole
``Configuration``.
"""
from __future__ import annotations

from dataclasses import dataclass

from yarnflow.conf import Configuration, options
from yarnflow.core.fs import FileSystemSettings


@dataclass(frozen=True)
class SparkSettings:
    """The executor's own SparkSession, sized within its container."""
    jvm_overhead_mb: int
    heap_fraction: float
    jvm_options: str

    @classmethod
    def of(cls, config: Configuration) -> "SparkSettings":
        return cls(config.get(options.SPARK_JVM_OVERHEAD), config.get(options.SPARK_HEAP_FRACTION),
                   config.get(options.SPARK_JVM_OPTIONS).strip())


@dataclass(frozen=True)
class TaskExecutorSettings:
    rpc_timeout: float
    heartbeat_interval: float
    heartbeat_timeout: float
    progress_interval: float
    registration_timeout: float
    registration_initial_backoff: float
    registration_max_backoff: float
    task_cancel_timeout: float
    overhead_mb: int
    partition_request_timeout: float
    buffers_per_channel: int
    batch_rows: int
    managed_memory_fraction: float
    filesystem: FileSystemSettings
    non_recoverable_exceptions: tuple[str, ...]
    spark: SparkSettings
    # the tests' fault injection (test.* options): empty in a user's configuration
    rpc_faults: str
    rpc_faults_seed: int
    slow_hosts: str
    failing_hosts: frozenset[str]

    @classmethod
    def of(cls, config: Configuration) -> "TaskExecutorSettings":
        return cls(
            rpc_timeout=config.get(options.RPC_ASK_TIMEOUT),
            heartbeat_interval=config.get(options.HEARTBEAT_INTERVAL),
            heartbeat_timeout=config.get(options.HEARTBEAT_TIMEOUT),
            progress_interval=config.get(options.PROGRESS_INTERVAL),
            registration_timeout=config.get(options.REGISTRATION_TIMEOUT),
            registration_initial_backoff=config.get(options.REGISTRATION_INITIAL_BACKOFF),
            registration_max_backoff=config.get(options.REGISTRATION_MAX_BACKOFF),
            task_cancel_timeout=config.get(options.TASK_CANCEL_TIMEOUT),
            overhead_mb=config.get(options.WORKER_OVERHEAD_MEMORY),
            partition_request_timeout=config.get(options.PARTITION_REQUEST_TIMEOUT),
            buffers_per_channel=config.get(options.BUFFERS_PER_CHANNEL),
            batch_rows=config.get(options.BATCH_ROWS),
            managed_memory_fraction=config.get(options.MANAGED_MEMORY_FRACTION),
            filesystem=options.filesystem_settings(config),
            non_recoverable_exceptions=config.get(options.NON_RECOVERABLE_EXCEPTIONS),
            spark=SparkSettings.of(config),
            rpc_faults=config.get(options.TEST_RPC_FAULTS),
            rpc_faults_seed=config.get(options.TEST_RPC_FAULTS_SEED),
            slow_hosts=config.get(options.TEST_SLOW_HOSTS),
            failing_hosts=frozenset(
                h for h in config.get(options.TEST_FAILING_HOSTS).replace(" ", "").split(",") if h))
