"""The ApplicationMaster's own settings, read once where each part starts: the
components (``components.py``), the Dispatcher, the web monitor and the YARN entry
points. A JobMaster's are per job (``jobmaster/settings.py``), the ResourceManager's
its own (``resourcemanager/settings.py``).

``ApplicationMasterComponents`` keeps the raw ``Configuration`` as well, only to hand
it on: merged with a job's own options to each JobMaster, as JSON to the local
driver's executors, and to the web UI's configuration page.
"""
from __future__ import annotations

from dataclasses import dataclass

from yarnflow.appmaster.jobmaster.settings import StorageSettings
from yarnflow.conf import Configuration, options
from yarnflow.core.resources import ResourceSpec


@dataclass(frozen=True)
class ApplicationMasterSettings:
    rpc_timeout: float
    registration_initial_backoff: float
    registration_max_backoff: float
    jobstore_max_capacity: int
    job_cancel_timeout: float
    default_slot: ResourceSpec
    # the tests' fault injection (test.rpc.faults): empty in a user's configuration
    rpc_faults: str
    rpc_faults_seed: int

    @classmethod
    def of(cls, config: Configuration) -> "ApplicationMasterSettings":
        return cls(config.get(options.RPC_ASK_TIMEOUT),
                   config.get(options.REGISTRATION_INITIAL_BACKOFF),
                   config.get(options.REGISTRATION_MAX_BACKOFF),
                   config.get(options.JOBSTORE_MAX_CAPACITY),
                   config.get(options.JOB_CANCEL_TIMEOUT),
                   options.default_slot_profile(config),
                   config.get(options.TEST_RPC_FAULTS), config.get(options.TEST_RPC_FAULTS_SEED))


@dataclass(frozen=True)
class DispatcherSettings:
    rpc_timeout: float
    job_graph_store_write_timeout: float
    jobstore_max_capacity: int
    collect_result_timeout: float
    default_slot: ResourceSpec

    @classmethod
    def of(cls, config: Configuration) -> "DispatcherSettings":
        return cls(config.get(options.RPC_ASK_TIMEOUT),
                   config.get(options.JOB_GRAPH_STORE_WRITE_TIMEOUT),
                   config.get(options.JOBSTORE_MAX_CAPACITY),
                   config.get(options.COLLECT_RESULT_TIMEOUT),
                   options.default_slot_profile(config))


@dataclass(frozen=True)
class WebMonitorSettings:
    bind_address: str
    bind_port: int
    refresh_interval: float

    @classmethod
    def of(cls, config: Configuration) -> "WebMonitorSettings":
        return cls(config.get(options.REST_BIND_ADDRESS), config.get(options.REST_BIND_PORT),
                   config.get(options.WEB_REFRESH_INTERVAL))


@dataclass(frozen=True)
class YarnApplicationSettings:
    """What the ApplicationMaster's YARN entry points read (``yarn_entrypoint.py``,
    ``yarn_session.py``, ``yarn_application.py``)."""
    history_dir: str
    collect_result_timeout: float
    job_cancel_timeout: float
    kerberos_principal: str
    yarn_client_timeout: float
    application_attempts: int
    largest_worker: ResourceSpec
    session_container_sizes: str
    worker_overhead_mb: int
    session_min_executors: int
    storage: StorageSettings      # where the attempt fence lives, beside the stored results

    @classmethod
    def of(cls, config: Configuration) -> "YarnApplicationSettings":
        return cls(config.get(options.SESSION_HISTORY_DIR), config.get(options.COLLECT_RESULT_TIMEOUT),
                   config.get(options.JOB_CANCEL_TIMEOUT), config.get(options.KERBEROS_PRINCIPAL),
                   config.get(options.YARN_CLIENT_TIMEOUT),
                   config.get(options.YARN_APPLICATION_ATTEMPTS), options.largest_worker(config),
                   config.get(options.SESSION_CONTAINER_SIZES),
                   config.get(options.WORKER_OVERHEAD_MEMORY),
                   config.get(options.SESSION_MIN_EXECUTORS), StorageSettings.of(config))
