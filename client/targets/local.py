"""The ``local`` target: the ApplicationMaster's components in this process, each
TaskExecutor a subprocess; no Hadoop needed. ``LocalCluster`` is also what tests and
benchmarks keep up across jobs."""
from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path

from yarnflow.core.ids import JobID
from yarnflow.appmaster.components import ApplicationMasterComponents, JobClient
from yarnflow.appmaster.dispatcher import Dispatcher, JobArchive
from yarnflow.appmaster.resourcemanager.drivers.local import LocalDriver
from yarnflow.appmaster.resourcemanager.resourcemanager import ResourceManager
from yarnflow.appmaster.webmonitor import ApplicationMasterSource, WebMonitorServer
from yarnflow.conf import Configuration, options
from yarnflow.core.container_ladder import ContainerLadder, parse_container_sizes
from yarnflow.core.details import JobDetails, JobResult
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.messages import ClusterOverview
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.rpc.channels import ChannelCache
from yarnflow.rpc.codec import JOB_DETAILS
from yarnflow.rpc.security import generate_cluster_credentials
from yarnflow.client.targets.app_store import yarnflow_home
from yarnflow.client.targets.base import JobHandle, Target, planned_worker_specs

__all__ = ["JobClient", "JobResult", "LocalCluster", "LocalTarget"]


class LocalCluster:
    """With ``session=True`` it is a local session: a Dispatcher in front, the
    container sizes of ``session.container-sizes`` and ``min_executors`` kept warm.
    The executors' logs go to ``log_dir`` when given (it outlives the cluster), else
    into the workdir."""

    def __init__(self, config: Configuration | None = None, workdir: str | Path | None = None,
                 session: bool = False, min_executors: int = 0,
                 log_dir: Path | None = None,
                 worker_specs: dict[ResourceSpec, WorkerSpec] | None = None) -> None:
        self.config = config or Configuration.load()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="yarnflow-local-"))
        self.log_dir = log_dir or self.workdir / "executors"
        self.tls = generate_cluster_credentials()
        self.tls_dir = self.tls.write(self.workdir / "tls")
        self.driver = LocalDriver(self.config, self.workdir / "executors", self.tls_dir,
                                  self.log_dir)
        ladder = ContainerLadder(parse_container_sizes(self.config.get(options.SESSION_CONTAINER_SIZES)),
                                 self.config.get(options.WORKER_OVERHEAD_MEMORY)) if session else None
        self.components = ApplicationMasterComponents(self.config, self.driver, self.tls,
                                                      worker_specs=worker_specs, ladder=ladder,
                                                      min_workers=min_executors)
        self.dispatcher = Dispatcher(self.components, ladder, JobArchive(
            self.config.get(options.SESSION_HISTORY_DIR) or self.workdir / "history", JOB_DETAILS)) \
            if session else None
        self._log = ComponentLog(log_dir / "appmaster.log") if log_dir is not None else None
        self.web: WebMonitorServer | None = None

    @property
    def resource_manager(self) -> ResourceManager:   # tests reach into the components
        return self.components.resource_manager

    @property
    def address(self) -> str:
        return self.components.address

    @property
    def channels(self) -> ChannelCache:
        return self.components.channels

    def start(self) -> "LocalCluster":
        if self._log is not None:
            self._log.attach()
        self.components.start()
        if self.config.get(options.LOCAL_WEB_UI):
            source = ApplicationMasterSource(self.components, self.dispatcher,
                                             "local-session" if self.dispatcher else "local")
            self.web = WebMonitorServer.serve(source, self.config)
        return self

    def submit(self, job_graph: JobGraph) -> JobClient:
        return self.components.submit(job_graph)

    def overview(self) -> ClusterOverview:
        return self.components.overview()

    def stop(self) -> None:
        if self.web is not None:
            self.web.stop()
        self.components.stop()
        if self.dispatcher is not None:
            self.dispatcher.stop()
        if self._log is not None:
            self._log.detach()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ComponentLog:
    """The log of the components a local run hosts in this process (ResourceManager,
    JobMaster), beside its executors' logs: what the ApplicationMaster's log is on
    YARN. Their warnings and gRPC's go here rather than to the user's terminal
    (``yarnflow run -v`` shows them there too). Logging the user configured keeps its
    levels; if nobody configured any, the file gets INFO."""
    LOGGERS = ("yarnflow", "grpc")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handler: logging.Handler | None = None
        self._raised_level = False

    def attach(self) -> None:
        self._handler = logging.FileHandler(self.path)
        self._handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s"))
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self._handler)
        ours = logging.getLogger("yarnflow")
        if not logging.getLogger().handlers and ours.level == logging.NOTSET:
            ours.setLevel(logging.INFO)
            self._raised_level = True

    def detach(self) -> None:
        handler, self._handler = self._handler, None
        if handler is None:
            return
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(handler)
        if self._raised_level:
            logging.getLogger("yarnflow").setLevel(logging.NOTSET)
            self._raised_level = False
        handler.close()


class LocalJobHandle(JobHandle):
    """A job on a cluster of its own in this process; the cluster stops with the job."""

    def __init__(self, cluster: LocalCluster, client: JobClient) -> None:
        self.job_id = client.job_id
        self.log_location = str(cluster.log_dir)
        self.web_url = cluster.web.url if cluster.web is not None else ""
        self._cluster: LocalCluster | None = cluster
        self._client = client

    def details(self) -> JobDetails | None:
        return self._client.details()

    def result(self) -> JobResult | None:
        future = self._client.result_future
        return future.result() if future.done() else None

    def wait(self, timeout: float | None = None, poll: float = 0.5) -> JobResult:
        try:
            return self._client.wait(timeout)
        except TimeoutError:
            raise TimeoutError(f"job {self.job_id} did not end within {timeout:g} s") from None
        finally:
            if self._client.result_future.done():
                self.close()

    def cancel(self) -> None:
        self._client.cancel()

    def savepoint(self, directory: str = "", timeout: float | None = None) -> str:
        location: str = self._client.savepoint(directory, False).result(timeout)
        return location

    def stop(self, directory: str = "", timeout: float | None = None) -> str:
        location: str = self._client.savepoint(directory, True).result(timeout)
        return location

    def close(self) -> None:
        """A local job does not outlive its handle: closing it stops the cluster."""
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.stop()


class LocalTarget(Target):
    """The ApplicationMaster's components in this process, one cluster per job."""
    name = "local"

    def submit(self, graph: JobGraph) -> JobHandle:
        log_dir = run_log_dir(self.config, graph.job_id)
        cluster = LocalCluster(self.config, log_dir=log_dir,
                               worker_specs=planned_worker_specs(graph, self.config)).start()
        try:
            return LocalJobHandle(cluster, cluster.submit(graph))
        except BaseException:
            cluster.stop()
            raise

    def submitted(self, handle: JobHandle) -> list[str]:
        return [f"web UI: {handle.web_url}"] if handle.web_url else []


def run_log_dir(config: Configuration, job_id: JobID) -> Path:
    """A new directory for one local run's executor logs under ``local.log-dir``, after
    removing the oldest runs' beyond ``local.log-retention``: a failure message names
    an executor's log, and the user reads it after the client exited."""
    root = Path(config.get(options.LOCAL_LOG_DIR) or yarnflow_home() / "local-logs")
    root.mkdir(parents=True, exist_ok=True)
    runs = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in runs[:max(0, len(runs) - config.get(options.LOCAL_LOG_RETENTION) + 1)]:
        shutil.rmtree(old, ignore_errors=True)
    run = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{job_id}"
    run.mkdir()
    return run
