"""What an ApplicationMaster hosts, whatever runs it: one mutual-TLS gRPC server
with the ResourceManager and a JobMaster per submitted job (Flink's
DispatcherResourceManagerComponent). The ``local`` target builds it with the local
driver inside the client's process; on YARN the ApplicationMaster builds it with the
YARN driver inside the Skein master container."""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any, Callable

import grpc

from yarnflow.appmaster.settings import ApplicationMasterSettings
from yarnflow.core.clock import poll_until
from yarnflow.core.ids import JobID, JobMasterId, ResourceManagerId
from yarnflow.appmaster.attempt_fence import NO_FENCE, AttemptFence
from yarnflow.appmaster.jobmaster.jobmaster import JobMaster
from yarnflow.appmaster.resourcemanager.delegation_tokens import TokenProvider
from yarnflow.appmaster.jobmaster.service import JobMasterService
from yarnflow.appmaster.jobmaster.slotpool import TaskExecutorLocation
from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver
from yarnflow.appmaster.resourcemanager.resourcemanager import ResourceManager
from yarnflow.appmaster.resourcemanager.service import ResourceManagerService
from yarnflow.core.container_ladder import ContainerLadder
from yarnflow.core.details import JobDetails, JobResult
from yarnflow.core.messages import ClusterOverview
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.conf import Configuration, options
from yarnflow.conf.job_level import for_job
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.plan import plan_vertices
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.channels import ChannelCache, start_server
from yarnflow.rpc.endpoint import describe_rpc_error
from yarnflow.rpc.testing import fault_injector
from yarnflow.rpc.gateways.jobmaster import GrpcJobMasterGateway
from yarnflow.rpc.gateways.resourcemanager import (GrpcResourceManagerGateway,
                                                   GrpcResourceManagerRegistrationGateway)
from yarnflow.rpc.gateways.taskexecutor import GrpcTaskExecutorGateway
from yarnflow.rpc.generated import jobmaster_pb2_grpc, resourcemanager_pb2_grpc
from yarnflow.rpc.security import TlsCredentials
from yarnflow.rpc.codec import as_received

log = logging.getLogger(__name__)


class JobClient:
    """A handle on a submitted job, in the process that hosts its JobMaster."""

    def __init__(self, job_master: JobMaster) -> None:
        self.job_master = job_master
        self.job_id = job_master.job_id

    @property
    def result_future(self) -> "Future[JobResult]":
        return self.job_master.result

    def wait(self, timeout: float | None = None) -> JobResult:
        return self.job_master.result.result(timeout=timeout)

    def details(self) -> JobDetails:
        return self.job_master.details()

    def cancel(self) -> None:
        self.job_master.cancel()

    def savepoint(self, directory: str = "", terminate: bool = False) -> "Future[str]":
        """A savepoint (with ``terminate``: then the job stops); its location."""
        return self.job_master.trigger_savepoint(directory, terminate)


class ApplicationMasterComponents:
    def __init__(self, config: Configuration, driver: ResourceDriver, tls: TlsCredentials,
                 bind_host: str = "127.0.0.1", advertised_host: str | None = None,
                 worker_specs: dict[ResourceSpec, WorkerSpec] | None = None,
                 ladder: ContainerLadder | None = None, min_workers: int = 0,
                 application_attempt: int = 1,
                 token_provider: TokenProvider | None = None,
                 fence: AttemptFence = NO_FENCE) -> None:
        """``application_attempt``: YARN's attempt number of the ApplicationMaster hosting
        these components, shown in every job's details; ``fence`` says whether it still
        owns the application's files (``attempt_fence.py``)."""
        if ladder is not None:
            # a session's (local or on YARN) warm executors are paid for already: a larger
            # idle one may serve an adaptively sized slot, and it starts only ladder sizes
            config = config.copy().set(options.ADAPTIVE_SLOT_MEMORY_EXACT, False)
        # raw, only to hand on: to each JobMaster with its job's own options, to the local
        # driver's executors, to the web UI's configuration page
        self.config = config
        self.settings = settings = ApplicationMasterSettings.of(config)
        self.application_attempt = application_attempt
        self.fence = fence
        self.tls = tls
        self.channels = ChannelCache(tls, fault_injector(settings.rpc_faults, settings.rpc_faults_seed))
        self.driver = driver
        self._timeout = settings.rpc_timeout
        self.resource_manager = ResourceManager(
            config, driver, self._rm_te_gateway, self._rm_jm_gateway, min_workers,
            worker_specs=worker_specs, ladder=ladder, token_provider=token_provider)
        self.job_masters = JobMasterService(self._timeout)
        self._bind_host = bind_host
        self._advertised_host = advertised_host or bind_host
        self._server: Any = None
        self.address = ""
        # Only running jobs: a finished one's JobMaster leaves at once, or a session
        # that runs for weeks would keep every job's ExecutionGraph and thread.
        self.jobs: dict[str, JobMaster] = {}
        # For the web UI: each job's plan, and how the latest jobs ended (a per-job
        # application has no archive to ask); both bounded like a session's job store.
        self.plans: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self.ended: OrderedDict[str, JobDetails] = OrderedDict()
        self._memory_lock = threading.Lock()

    def start(self, register_more: Callable[[Any], None] | None = None) -> "ApplicationMasterComponents":
        """``register_more(server)`` adds services of the hosting mode (a session's
        Dispatcher) to the same mutual-TLS server."""
        def register(server: Any) -> None:
            resourcemanager_pb2_grpc.add_ResourceManagerServicer_to_server(
                ResourceManagerService(self.resource_manager, self._timeout), server)
            jobmaster_pb2_grpc.add_JobMasterServicer_to_server(self.job_masters, server)
            if register_more is not None:
                register_more(server)
        self._server, bound = start_server(self.tls, register, host=self._bind_host, workers=32)
        self.address = f"{self._advertised_host}:{bound.rsplit(':', 1)[1]}"
        self.resource_manager.start(self.address)
        return self

    def submit(self, job_graph: JobGraph, admitted: "Future[None] | None" = None) -> JobClient:
        """Start a JobMaster for the job; returns at once. ``admitted``: see JobMaster."""
        received = as_received(job_graph)
        jm = JobMaster(received, for_job(self.config, received.job_configuration), self.address,
                       self._te_gateway_factory, application_attempt=self.application_attempt,
                       admitted=admitted, fence=self.fence)
        jm_id = jm.job_master_id
        self.job_masters.register(jm)
        channel = self.channels.get(self.address)
        try:
            rm_id = self._register(GrpcResourceManagerRegistrationGateway(channel, self._timeout),
                                   jm.job_id, jm_id)
        except RuntimeError:
            self.job_masters.unregister(jm)
            jm.shutdown()
            raise
        jm.connect_resource_manager(GrpcResourceManagerGateway(
            channel, rm_id, jm.job_id, jm_id, self.address, self._timeout))
        self.jobs[jm.job_id] = jm
        self._remember(self.plans, jm.job_id,
                       plan_vertices(received, self.settings.default_slot))
        jm.add_termination_listener(lambda result: self._release(jm, result))
        jm.start()
        return JobClient(jm)

    def _register(self, gateway: GrpcResourceManagerRegistrationGateway, job_id: JobID,
                  jm_id: JobMasterId) -> ResourceManagerId:
        """The JobMaster's registration with the ResourceManager, asked again after a
        lost request or answer (FLIP-6's retrying registration, with the executors'
        backoff): it is idempotent per job, and a lost one must not fail a submission."""
        errors: list[str] = []

        def attempt() -> ResourceManagerId | None:
            try:
                return gateway.register_job_master(job_id, jm_id, self.address).result(
                    self._timeout + 1)
            except grpc.RpcError as err:
                errors.append(describe_rpc_error(err))
                log.warning("job %s: registering its JobMaster with the ResourceManager "
                            "failed (%s); asking again", job_id, errors[-1])
                return None
        rm_id = poll_until(attempt, self._timeout,
                           self.settings.registration_initial_backoff,
                           max_interval=self.settings.registration_max_backoff)
        if rm_id is None:
            raise RuntimeError(f"job {job_id}: its JobMaster could not register with the "
                               f"ResourceManager within {self._timeout:g} s "
                               f"(rpc.ask-timeout): {errors[-1] if errors else 'no answer'}")
        return rm_id

    def _release(self, jm: JobMaster, result: JobResult) -> None:
        self.job_masters.unregister(jm)
        self._remember(self.ended, jm.job_id, result.details)
        self.jobs.pop(jm.job_id, None)

    def _remember(self, store: "OrderedDict[str, Any]", job_id: JobID, value: Any) -> None:
        with self._memory_lock:
            store[job_id] = value
            while len(store) > self.settings.jobstore_max_capacity:
                store.popitem(last=False)

    def plan(self, job_id: JobID) -> list[dict[str, Any]] | None:
        """The job's plan (``yarnflow.core.plan.plan_vertices``), while remembered."""
        with self._memory_lock:
            return self.plans.get(job_id)

    def ended_jobs(self) -> list[JobDetails]:
        with self._memory_lock:
            return list(self.ended.values())

    def _te_gateway_factory(self, location: TaskExecutorLocation,
                            job_master_id: JobMasterId) -> GrpcTaskExecutorGateway:
        return GrpcTaskExecutorGateway(self.channels.get(location.rpc_address), job_master_id,
                                       self._timeout)

    def _rm_te_gateway(self, location: TaskExecutorLocation,
                       resource_manager_id: ResourceManagerId) -> GrpcTaskExecutorGateway:
        return GrpcTaskExecutorGateway(self.channels.get(location.rpc_address), JobMasterId(""),
                                       self._timeout, resource_manager_id=resource_manager_id)

    def _rm_jm_gateway(self, address: str, job_master_id: JobMasterId) -> GrpcJobMasterGateway:
        return GrpcJobMasterGateway(self.channels.get(address), job_master_id, self._timeout)

    def overview(self) -> ClusterOverview:
        return self.resource_manager.main.call(self.resource_manager.overview)

    def stop(self) -> None:
        for jm in list(self.jobs.values()):
            if not jm.result.done():
                try:
                    jm.cancel()
                    jm.result.result(timeout=self.settings.job_cancel_timeout)
                except Exception:  # noqa: BLE001 - whatever it was, the JobMaster goes now
                    log.warning("job %s did not cancel cleanly", jm.job_id)
            jm.shutdown()
        self.resource_manager.stop()
        if self._server is not None:
            self._server.stop(grace=1.0)
        self.channels.close()
