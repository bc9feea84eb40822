"""The ResourceManager's settings and its drivers', read once where each starts
(Flink's ``ResourceManagerRuntimeServicesConfiguration``).

Its periodic checks (heartbeats, workers that do not start, the capacity check) run
every second: they read fields, not parsed options.
"""
from __future__ import annotations

from dataclasses import dataclass

from yarnflow.conf import Configuration, options
from yarnflow.core.resources import ResourceSpec


@dataclass(frozen=True)
class RenewalSettings:
    """``security.delegation.tokens.renewal.*``: when the ApplicationMaster obtains new
    HDFS delegation tokens."""
    time_ratio: float
    retry_backoff_s: float
    expiry_warning_s: float

    @classmethod
    def of(cls, config: Configuration) -> "RenewalSettings":
        return cls(config.get(options.DELEGATION_TOKENS_RENEWAL_TIME_RATIO),
                   config.get(options.DELEGATION_TOKENS_RENEWAL_RETRY_BACKOFF),
                   config.get(options.DELEGATION_TOKENS_EXPIRY_WARNING))


@dataclass(frozen=True)
class ResourceManagerSettings:
    num_task_slots: int
    worker_overhead_mb: int
    max_workers: int
    taskmanager_timeout: float
    heartbeat_interval: float
    heartbeat_timeout: float
    node_report_interval: float
    worker_retry_interval: float
    worker_max_start_failures: int
    worker_start_timeout: float
    renewal: RenewalSettings

    @classmethod
    def of(cls, config: Configuration) -> "ResourceManagerSettings":
        return cls(
            num_task_slots=config.get(options.NUM_TASK_SLOTS),
            worker_overhead_mb=config.get(options.WORKER_OVERHEAD_MEMORY),
            max_workers=config.get(options.MAX_WORKERS),
            taskmanager_timeout=config.get(options.TASKMANAGER_TIMEOUT),
            heartbeat_interval=config.get(options.HEARTBEAT_INTERVAL),
            heartbeat_timeout=config.get(options.HEARTBEAT_TIMEOUT),
            node_report_interval=config.get(options.NODE_REPORT_INTERVAL),
            worker_retry_interval=config.get(options.WORKER_RETRY_INTERVAL),
            worker_max_start_failures=config.get(options.WORKER_MAX_START_FAILURES),
            worker_start_timeout=config.get(options.WORKER_START_TIMEOUT),
            renewal=RenewalSettings.of(config))


@dataclass(frozen=True)
class YarnDriverSettings:
    """How the YARN driver talks to Skein and places containers."""
    skein_timeout: float
    locality_wait: float
    container_poll_interval: float

    @classmethod
    def of(cls, config: Configuration) -> "YarnDriverSettings":
        return cls(config.get(options.YARN_SKEIN_TIMEOUT), config.get(options.YARN_LOCALITY_WAIT),
                   config.get(options.YARN_CONTAINER_POLL_INTERVAL))


@dataclass(frozen=True)
class LocalDriverSettings:
    """The local driver's executors: which Python runs them, and the largest one."""
    python: str
    largest_worker: ResourceSpec

    @classmethod
    def of(cls, config: Configuration) -> "LocalDriverSettings":
        return cls(config.get(options.LOCAL_PYTHON), options.largest_worker(config))
