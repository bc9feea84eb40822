"""The ResourceManager (seed 004): registered TaskExecutors and their slots, JobMasters
asking for slots, and a driver that starts and stops workers.

Its lifetime is independent of any job. Executors idle past
``resourcemanager.taskmanager-timeout`` are stopped; an executor that dies or falls
silent is unregistered and every JobMaster with slots on it is told why.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver
from yarnflow.appmaster.resourcemanager.slotmanager import SlotManager, SlotRequest
from yarnflow.core.container_ladder import ContainerLadder, NoContainerFits
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.conf import Configuration, options
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.channels import ChannelCache
from yarnflow.rpc.endpoint import MainThread, describe_rpc_error
from yarnflow.rpc.gateways import call_future
from yarnflow.rpc.generated import (jobmaster_pb2, jobmaster_pb2_grpc, resourcemanager_pb2,
                                    taskexecutor_pb2, taskexecutor_pb2_grpc)
from yarnflow.rpc.codec import fill_resource_spec, resource_spec_from_proto

log = logging.getLogger(__name__)


@dataclass
class RegisteredExecutor:
    resource_id: str
    rpc_address: str
    data_address: str
    worker_spec: str
    stub: Any
    last_heartbeat: float


@dataclass
class RegisteredJobMaster:
    job_id: str
    job_master_id: str
    address: str
    stub: Any


class ResourceManager:
    def __init__(self, config: Configuration, driver: ResourceDriver, channels: ChannelCache,
                 min_workers: int = 0,
                 worker_specs: dict[ResourceSpec, WorkerSpec] | None = None,
                 ladder: ContainerLadder | None = None) -> None:
        self.config = config
        self.driver = driver
        self.resource_manager_id = uuid.uuid4().hex
        self.main = MainThread("resourcemanager")
        self._channels = channels
        self._timeout = config.get(options.RPC_ASK_TIMEOUT)
        self._min_workers = min_workers
        self.slot_manager = SlotManager(
            self, config.get(options.NUM_TASK_SLOTS), config.get(options.WORKER_OVERHEAD_MEMORY),
            config.get(options.MAX_WORKERS), config.get(options.TASKMANAGER_TIMEOUT),
            worker_specs, ladder)
        self.executors: dict[str, RegisteredExecutor] = {}
        self.job_masters: dict[str, RegisteredJobMaster] = {}
        self._start_failures = 0
        self._stopped: set[str] = set()
        self._checks: Any = None
        self.address = ""

    def start(self, address: str) -> None:
        """Begin serving; ``address`` is where this ResourceManager's gRPC service is."""
        self.address = address
        self.driver.start(self, address)
        interval = min(self.config.get(options.HEARTBEAT_INTERVAL),
                       self.config.get(options.TASKMANAGER_TIMEOUT) / 4, 1.0)
        self._checks = self.main.schedule_periodic(max(0.05, interval), self._periodic_checks)

    def stop(self) -> None:
        if self._checks is not None:
            self._checks.cancel()
        self.driver.stop()
        self.main.shutdown()

    # --- TaskExecutors ---------------------------------------------------------------
    def register_task_executor(self, request: resourcemanager_pb2.RegisterTaskExecutorRequest
                               ) -> resourcemanager_pb2.RegistrationResponse:
        location = request.location
        resource_id = location.resource_id
        if resource_id in self._stopped:
            return resourcemanager_pb2.RegistrationResponse(
                accepted=False, reason=f"TaskExecutor {resource_id} was stopped by this "
                "ResourceManager and may not register again")
        if resource_id in self.executors:   # a re-registration after a lost heartbeat
            self.slot_manager.unregister_worker(resource_id)
        slots = request.slot_report.slots
        profile = resource_spec_from_proto(slots[0].profile) if slots else \
            resource_spec_from_proto(request.total_resources)
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(self._channels.get(location.rpc_address))
        self.executors[resource_id] = RegisteredExecutor(resource_id, location.rpc_address,
                                                         location.data_address, request.worker_spec, stub, time.monotonic())
        self._start_failures = 0
        self.slot_manager.register_worker(
            resource_id, profile, len(slots),
            [(s.slot_index, s.allocation_id, s.job_id) for s in slots],
            request.slot_report.version)
        log.info("TaskExecutor %s registered (%d slots of %s, worker spec %s)", resource_id,
                 len(slots), profile, request.worker_spec)
        return resourcemanager_pb2.RegistrationResponse(
            accepted=True, resource_manager_id=self.resource_manager_id)

    def heartbeat_from_task_executor(self, request: resourcemanager_pb2.TaskExecutorHeartbeat
                                     ) -> resourcemanager_pb2.HeartbeatResponse:
        executor = self.executors.get(request.resource_id)
        if executor is None or request.resource_manager_id != self.resource_manager_id:
            return resourcemanager_pb2.HeartbeatResponse(known=False)
        executor.last_heartbeat = time.monotonic()
        self.slot_manager.report_slot_status(
            request.resource_id,
            [(s.slot_index, s.allocation_id, s.job_id) for s in request.slot_report.slots],
            request.holds_partitions, request.slot_report.version)
        return resourcemanager_pb2.HeartbeatResponse(known=True)

    def notify_slot_available(self, resource_id: str, slot_index: int, allocation_id: str) -> None:
        self.slot_manager.free_slot(resource_id, slot_index, allocation_id)

    def on_worker_terminated(self, resource_id: str, cause: str) -> None:
        """Driver callback (any thread): a worker process or container ended."""
        self.main.execute(self._worker_terminated, resource_id, cause)

    def _worker_terminated(self, resource_id: str, cause: str) -> None:
        if resource_id in self.slot_manager.pending_workers:
            self._start_failures += 1
            give_up = self._start_failures > self.config.get(options.WORKER_MAX_START_FAILURES)
            log.warning("worker %s failed to start (%s); %d failed starts in a row", resource_id,
                        cause, self._start_failures)
            self.slot_manager.worker_start_failed(
                resource_id, f"TaskExecutor {resource_id} failed to start: {cause} "
                f"({self._start_failures} failures in a row, more than "
                "resourcemanager.start-worker-max-failures)", give_up)
            # back off exponentially while starts keep failing (a bad node, a full queue)
            delay = min(self.config.get(options.WORKER_RETRY_INTERVAL)
                        * 2 ** (self._start_failures - 1), 60.0)
            self.main.schedule(delay, self.slot_manager.match_waiting_requests)
            return
        self.close_task_executor(resource_id, f"TaskExecutor {resource_id} was lost: {cause}")

    def close_task_executor(self, resource_id: str, reason: str) -> None:
        jobs = self.slot_manager.jobs_on(resource_id)
        executor = self.executors.pop(resource_id, None)
        self.slot_manager.unregister_worker(resource_id)
        if executor is None:
            return
        log.warning("%s", reason)
        for job_id in jobs:
            jm = self.job_masters.get(job_id)
            if jm is not None:
                call_future(jm.stub.DisconnectTaskExecutor, jobmaster_pb2.TaskExecutorDisconnect(
                    job_master_id=jm.job_master_id, resource_id=resource_id, reason=reason),
                    self._timeout)

    # --- JobMasters ------------------------------------------------------------------
    def register_job_master(self, job_id: str, job_master_id: str, address: str) -> str:
        stub = jobmaster_pb2_grpc.JobMasterStub(self._channels.get(address))
        self.job_masters[job_id] = RegisteredJobMaster(job_id, job_master_id, address, stub)
        return self.resource_manager_id

    def disconnect_job_master(self, job_id: str, job_master_id: str) -> None:
        jm = self.job_masters.get(job_id)
        if jm is not None and jm.job_master_id == job_master_id:
            del self.job_masters[job_id]
            for allocation_id, request in list(self.slot_manager.requests.items()):
                if request.job_id == job_id:
                    self.slot_manager.cancel_slot_request(allocation_id)

    def request_slot(self, message: resourcemanager_pb2.SlotRequest) -> str:
        """Returns an error message, or '' when the request was taken."""
        jm = self.job_masters.get(message.job_id)
        if jm is None or jm.job_master_id != message.job_master_id:
            return f"job {message.job_id} has no registered JobMaster with that JobMasterId"
        profile = resource_spec_from_proto(message.profile)
        try:
            spec = self.slot_manager.worker_spec_for(profile)
        except NoContainerFits as err:
            return str(err)
        largest = self.driver.max_worker_resources()
        if not spec.container.fits_in(largest):
            return (f"a slot of {profile} needs a container of {spec.container}, larger than the "
                    f"largest this cluster gives ({largest})")
        self.slot_manager.request_slot(SlotRequest(
            message.allocation_id, message.job_id, message.job_master_id,
            message.job_master_address, profile))
        return ""

    # --- SlotManagerActions ----------------------------------------------------------
    def start_worker(self, spec: WorkerSpec) -> str:
        return self.driver.request_worker(spec)

    def stop_worker(self, resource_id: str, reason: str) -> None:
        self._stopped.add(resource_id)
        executor = self.executors.pop(resource_id, None)
        self.slot_manager.unregister_worker(resource_id)
        log.info("stopping TaskExecutor %s: %s", resource_id, reason)
        if executor is not None:
            call_future(executor.stub.Shutdown, taskexecutor_pb2.ShutdownMessage(
                resource_manager_id=self.resource_manager_id, reason=reason), self._timeout)
            self.driver.release_worker(resource_id)

    def allocate_slot(self, resource_id: str, slot_index: int, request: SlotRequest) -> None:
        executor = self.executors[resource_id]
        message = taskexecutor_pb2.RequestSlotMessage(
            resource_manager_id=self.resource_manager_id, slot_index=slot_index,
            job_id=request.job_id, allocation_id=request.allocation_id,
            job_master_address=request.job_master_address, job_master_id=request.job_master_id)
        fill_resource_spec(request.profile, message.profile)

        def done(fut: Any) -> None:
            err = fut.exception()
            if err is None:
                self.main.execute(self.slot_manager.allocation_confirmed, request.allocation_id,
                                  fut.result().report_version)
            else:
                self.main.execute(self.slot_manager.allocation_refused, request.allocation_id,
                                  describe_rpc_error(err))
        call_future(executor.stub.RequestSlot, message, self._timeout).add_done_callback(done)

    def notify_allocation_failure(self, request: SlotRequest, cause: str) -> None:
        jm = self.job_masters.get(request.job_id)
        if jm is not None:
            call_future(jm.stub.NotifyAllocationFailure, jobmaster_pb2.AllocationFailure(
                job_master_id=jm.job_master_id, allocation_id=request.allocation_id, cause=cause),
                self._timeout)

    # --- periodic --------------------------------------------------------------------
    def _periodic_checks(self) -> None:
        now = time.monotonic()
        timeout = self.config.get(options.HEARTBEAT_TIMEOUT)
        for resource_id, executor in list(self.executors.items()):
            if now - executor.last_heartbeat > timeout:
                self._stopped.add(resource_id)
                self.driver.release_worker(resource_id)
                self.close_task_executor(resource_id, (
                    f"TaskExecutor {resource_id} sent no heartbeat for {timeout:g} s "
                    "(heartbeat.timeout): it is presumed dead"))
        start_timeout = self.config.get(options.WORKER_START_TIMEOUT)
        for resource_id, pending in list(self.slot_manager.pending_workers.items()):
            if now - pending.requested_at > start_timeout:
                self.driver.release_worker(resource_id)
                self._worker_terminated(resource_id, f"it did not register within "
                                        f"{start_timeout:g} s (resourcemanager.worker.start-timeout)")
        for resource_id in self.slot_manager.idle_workers(keep=self._min_workers):
            self.stop_worker(resource_id, "idle longer than resourcemanager.taskmanager-timeout")

    def overview(self) -> resourcemanager_pb2.ClusterOverview:
        message = resourcemanager_pb2.ClusterOverview(
            pending_workers=len(self.slot_manager.pending_workers),
            pending_slot_requests=len(self.slot_manager.requests))
        for resource_id, worker in self.slot_manager.workers.items():
            executor = self.executors.get(resource_id)
            info = message.workers.add(
                resource_id=resource_id, worker_spec=worker.spec.name if worker.spec else "",
                num_slots=len(worker.slots),
                free_slots=len(worker.slots) - worker.busy_slots(),
                rpc_address=executor.rpc_address if executor else "",
                data_address=executor.data_address if executor else "")
            if worker.slots:
                fill_resource_spec(worker.slots[0].profile, info.slot_profile)
        message.workers_started_per_spec.update(self.slot_manager.started_per_spec)
        return message
