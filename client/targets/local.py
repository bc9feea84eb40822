"""The ``local`` target: the ApplicationMaster's components in this process, each
TaskExecutor a subprocess; no Hadoop needed. ``LocalCluster`` is also what tests and
benchmarks keep up across jobs."""
from __future__ import annotations

import logging
import shutil
import tempfile
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from yarnflow.appmaster.jobmaster.jobmaster import JobMaster, JobResult
from yarnflow.appmaster.jobmaster.service import JobMasterService
from yarnflow.appmaster.jobmaster.slotpool import TaskExecutorLocation
from yarnflow.appmaster.resourcemanager.drivers.local import LocalDriver
from yarnflow.appmaster.resourcemanager.resource_manager import ResourceManager
from yarnflow.appmaster.resourcemanager.service import ResourceManagerService
from yarnflow.conf import Configuration, options
from yarnflow.jobgraph import JobGraph
from yarnflow.rpc.channels import ChannelCache, start_server
from yarnflow.rpc.gateways import (GrpcResourceManagerGateway, GrpcTaskExecutorGateway,
                                   register_job_master)
from yarnflow.rpc.generated import jobmaster_pb2_grpc, resourcemanager_pb2, resourcemanager_pb2_grpc
from yarnflow.rpc.security import generate_cluster_credentials

log = logging.getLogger(__name__)


class JobClient:
    """A handle on a submitted job."""

    def __init__(self, job_master: JobMaster) -> None:
        self.job_master = job_master
        self.job_id = job_master.job_id

    @property
    def result_future(self) -> "Future[JobResult]":
        return self.job_master.result

    def wait(self, timeout: float | None = None) -> JobResult:
        return self.job_master.result.result(timeout=timeout)

    def details(self) -> Any:
        return self.job_master.details()

    def cancel(self) -> None:
        self.job_master.cancel()


class LocalCluster:
    def __init__(self, config: Configuration | None = None, workdir: str | Path | None = None) -> None:
        self.config = config or Configuration.load()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="yarnflow-local-"))
        self.tls = generate_cluster_credentials()
        self.tls_dir = self.tls.write(self.workdir / "tls")
        self.channels = ChannelCache(self.tls)
        timeout = self.config.get(options.RPC_ASK_TIMEOUT)
        self.driver = LocalDriver(self.config, self.workdir / "executors", self.tls_dir)
        self.resource_manager = ResourceManager(self.config, self.driver, self.channels)
        self.job_masters = JobMasterService(timeout)
        self._timeout = timeout
        self._server: Any = None
        self.address = ""
        self.jobs: list[JobMaster] = []

    def start(self) -> "LocalCluster":
        def register(server: Any) -> None:
            resourcemanager_pb2_grpc.add_ResourceManagerServicer_to_server(
                ResourceManagerService(self.resource_manager, self._timeout), server)
            jobmaster_pb2_grpc.add_JobMasterServicer_to_server(self.job_masters, server)
        self._server, self.address = start_server(self.tls, register, workers=32)
        self.resource_manager.start(self.address)
        return self

    def submit(self, job_graph: JobGraph) -> JobClient:
        """Start a JobMaster for the job; returns at once."""
        jm = JobMaster(job_graph.to_proto(), self.config, self.address, self._te_gateway_factory)
        jm_id = jm.job_master_id
        self.job_masters.register(jm)
        channel = self.channels.get(self.address)
        rm_id = register_job_master(channel, jm.job_id, jm_id, self.address, self._timeout)
        jm.connect_resource_manager(GrpcResourceManagerGateway(
            channel, rm_id, jm.job_id, jm_id, self.address, self._timeout))
        jm.add_termination_listener(lambda result: self.job_masters.unregister(jm))
        jm.start()
        self.jobs.append(jm)
        return JobClient(jm)

    def _te_gateway_factory(self, location: TaskExecutorLocation,
                            job_master_id: str) -> GrpcTaskExecutorGateway:
        return GrpcTaskExecutorGateway(self.channels.get(location.rpc_address), job_master_id,
                                       self._timeout)

    def overview(self) -> resourcemanager_pb2.ClusterOverview:
        return self.resource_manager.main.call(self.resource_manager.overview)

    def stop(self) -> None:
        for jm in self.jobs:
            if not jm.result.done():
                try:
                    jm.cancel()
                    jm.result.result(timeout=self.config.get(options.JOB_CANCEL_TIMEOUT))
                except Exception:
                    log.warning("job %s did not cancel cleanly", jm.job_id)
            jm.shutdown()
        self.resource_manager.stop()
        if self._server is not None:
            self._server.stop(grace=1.0)
        self.channels.close()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
