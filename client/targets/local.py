"""The ``local`` target: the ApplicationMaster's components in this process, each
TaskExecutor a subprocess; no Hadoop needed. ``LocalCluster`` is also what tests and
benchmarks keep up across jobs."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from yarnflow.appmaster.components import ApplicationMasterComponents, JobClient
from yarnflow.appmaster.dispatcher import Dispatcher, JobArchive
from yarnflow.appmaster.resourcemanager.drivers.local import LocalDriver
from yarnflow.conf import Configuration, options
from yarnflow.core.container_ladder import ContainerLadder, parse_container_sizes
from yarnflow.core.details import JobDetails, JobResult
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.messages import ClusterOverview
from yarnflow.rpc.security import generate_cluster_credentials
from yarnflow.targets.base import JobHandle, Target

__all__ = ["JobClient", "JobResult", "LocalCluster", "LocalTarget"]


class LocalCluster:
    """With ``session=True`` it is a local session: a Dispatcher in front, the
    container sizes of ``session.container-sizes`` and ``min_executors`` kept warm."""

    def __init__(self, config: Configuration | None = None, workdir: str | Path | None = None,
                 session: bool = False, min_executors: int = 0) -> None:
        self.config = config or Configuration.load()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="yarnflow-local-"))
        self.tls = generate_cluster_credentials()
        self.tls_dir = self.tls.write(self.workdir / "tls")
        self.driver = LocalDriver(self.config, self.workdir / "executors", self.tls_dir)
        ladder = ContainerLadder(parse_container_sizes(self.config.get(options.SESSION_CONTAINER_SIZES)),
                                 self.config.get(options.WORKER_OVERHEAD_MEMORY)) if session else None
        self.components = ApplicationMasterComponents(self.config, self.driver, self.tls,
                                                      ladder=ladder, min_workers=min_executors)
        self.dispatcher = Dispatcher(self.components, ladder, JobArchive(
            self.config.get(options.SESSION_HISTORY_DIR) or self.workdir / "history")) \
            if session else None

    @property
    def resource_manager(self):  # noqa: ANN201 - tests reach into the components
        return self.components.resource_manager

    @property
    def address(self) -> str:
        return self.components.address

    @property
    def channels(self):  # noqa: ANN201
        return self.components.channels

    def start(self) -> "LocalCluster":
        self.components.start()
        return self

    def submit(self, job_graph: JobGraph) -> JobClient:
        return self.components.submit(job_graph)

    def overview(self) -> ClusterOverview:
        return self.components.overview()

    def stop(self) -> None:
        self.components.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LocalJobHandle(JobHandle):
    """A job on a cluster of its own in this process; the cluster stops with the job."""

    def __init__(self, cluster: LocalCluster, client: JobClient) -> None:
        self.job_id = client.job_id
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

    def close(self) -> None:
        """A local job does not outlive its handle: closing it stops the cluster."""
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.stop()


class LocalTarget(Target):
    """The ApplicationMaster's components in this process, one cluster per job."""
    name = "local"

    def submit(self, graph: JobGraph) -> JobHandle:
        cluster = LocalCluster(self.config).start()
        try:
            return LocalJobHandle(cluster, cluster.submit(graph))
        except BaseException:
            cluster.stop()
            raise
