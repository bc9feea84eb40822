"""The TaskExecutor (seed 004): registers with the ResourceManager, heartbeats with its
slot report, offers slots to JobMasters when told to, runs their tasks, and serves
its result partitions."""
from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from pathlib import Path
from concurrent.futures import Future
from typing import Any

from yarnflow.conf import Configuration, options
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.channels import ChannelCache, start_server
from yarnflow.rpc.endpoint import MainThread, describe_rpc_error
from yarnflow.rpc.gateways import call_future
from yarnflow.rpc.generated import (common_pb2, jobmaster_pb2, jobmaster_pb2_grpc,
                                    resourcemanager_pb2, resourcemanager_pb2_grpc,
                                    taskexecutor_pb2, taskexecutor_pb2_grpc)
from yarnflow.rpc.security import TlsCredentials
from yarnflow.taskexecutor.network.data_server import DataClients, DataServer
from yarnflow.taskexecutor.network.partition_manager import ResultPartitionManager
from yarnflow.taskexecutor.slot import SlotStateError, TaskSlotTable
from yarnflow.taskexecutor.spark.session import SparkSessionHolder
from yarnflow.taskexecutor.task import Task, TaskServices
from yarnflow.rpc.codec import fill_resource_spec

log = logging.getLogger(__name__)


class TaskExecutor:
    def __init__(self, resource_id: str, rm_address: str, tls: TlsCredentials,
                 config: Configuration, num_slots: int, slot_profile: ResourceSpec,
                 worker_spec: str, workdir: Path, host: str = "127.0.0.1") -> None:
        self.resource_id = resource_id
        self.config = config
        self.host = host
        self.worker_spec = worker_spec
        self.workdir = workdir
        self.main = MainThread(f"taskexecutor-{resource_id}")
        self.slots = TaskSlotTable(num_slots, slot_profile)
        self.partitions = ResultPartitionManager()
        self._tls = tls
        self._channels = ChannelCache(tls)
        self._rm_address = rm_address
        self._rm_stub = resourcemanager_pb2_grpc.ResourceManagerStub(self._channels.get(rm_address))
        self.resource_manager_id = ""
        self._timeout = config.get(options.RPC_ASK_TIMEOUT)
        self._stopped = threading.Event()
        self.stopped_cleanly = threading.Event()
        self._registering = False
        self._last_rm_ack = time.monotonic()
        self._jm_last_ack: dict[str, float] = {}
        self._heartbeats: Any = None
        self.data_server = DataServer(self.partitions, tls, host,
                                      config.get(options.PARTITION_REQUEST_TIMEOUT))
        self._services = TaskServices(
            resource_id, self.partitions, DataClients(tls), self._job_master_stub, self._timeout,
            config.get(options.PARTITION_REQUEST_TIMEOUT), config.get(options.BUFFERS_PER_CHANNEL),
            config.get(options.BATCH_ROWS), workdir / "partitions",
            SparkSessionHolder(config, num_slots, slot_profile, str(workdir / "spark")))
        self._server: Any = None
        self.rpc_address = ""

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        from yarnflow.taskexecutor.service import TaskExecutorService
        self.workdir.mkdir(parents=True, exist_ok=True)
        threading.Thread(target=self.data_server.serve, name="data-server", daemon=True).start()
        self._server, self.rpc_address = start_server(
            self._tls, lambda s: taskexecutor_pb2_grpc.add_TaskExecutorServicer_to_server(
                TaskExecutorService(self, self._timeout), s), host=self.host)
        log.info("TaskExecutor %s serving control on %s, data on %s", self.resource_id,
                 self.rpc_address, self.data_server.address)
        self._start_registration()

    def location(self) -> common_pb2.TaskExecutorLocation:
        return common_pb2.TaskExecutorLocation(
            resource_id=self.resource_id, host=self.host, rpc_address=self.rpc_address,
            data_address=self.data_server.address)

    def wait(self) -> None:
        # A timed wait: Python runs signal handlers (SIGTERM) only between waits.
        while not self._stopped.wait(0.5):
            pass

    def stop(self, reason: str) -> None:
        if self._stopped.is_set():
            return
        log.info("TaskExecutor %s stopping: %s", self.resource_id, reason)
        for task in self.slots.tasks():
            task.cancel()
        if self._heartbeats is not None:
            self._heartbeats.cancel()
        self._stopped.set()
        if self._server is not None:
            self._server.stop(grace=1.0)
        self.data_server.shutdown()
        self._services.spark.stop()
        self._channels.close()
        self.main.shutdown()
        shutil.rmtree(self.workdir / "partitions", ignore_errors=True)
        self.stopped_cleanly.set()

    # --- registration with the ResourceManager ----------------------------------------
    def _start_registration(self) -> None:
        if self._registering or self._stopped.is_set():
            return
        self._registering = True
        threading.Thread(target=self._register_loop, name="registration", daemon=True).start()

    def _register_loop(self) -> None:
        """Retry with exponential backoff until registered or registration.timeout."""
        backoff = self.config.get(options.REGISTRATION_INITIAL_BACKOFF)
        max_backoff = self.config.get(options.REGISTRATION_MAX_BACKOFF)
        deadline = time.monotonic() + self.config.get(options.REGISTRATION_TIMEOUT)
        last_error = ""
        while not self._stopped.is_set():
            request = resourcemanager_pb2.RegisterTaskExecutorRequest(
                location=self.location(), worker_spec=self.worker_spec)
            request.slot_report.CopyFrom(self.main.call(self.slot_report))
            try:
                reply = self._rm_stub.RegisterTaskExecutor(request, timeout=self._timeout)
                if reply.accepted:
                    self.main.call(self._registered, reply.resource_manager_id)
                    return
                last_error = reply.reason
            except Exception as err:
                last_error = describe_rpc_error(err)
            if time.monotonic() + backoff > deadline:
                log.error("could not register with the ResourceManager at %s within "
                          "taskmanager.registration.timeout: %s", self._rm_address, last_error)
                self.stop("registration timed out")
                return
            log.info("registration with %s failed (%s); retrying in %.1f s", self._rm_address,
                     last_error, backoff)
            self._stopped.wait(backoff)
            backoff = min(backoff * 2, max_backoff)

    def _registered(self, resource_manager_id: str) -> None:
        self._registering = False
        self.resource_manager_id = resource_manager_id
        self._last_rm_ack = time.monotonic()
        log.info("registered with ResourceManager %s", resource_manager_id)
        if self._heartbeats is None:
            self._heartbeats = self.main.schedule_periodic(
                self.config.get(options.HEARTBEAT_INTERVAL), self._send_heartbeats)

    def slot_report(self) -> common_pb2.SlotReport:
        report = common_pb2.SlotReport(version=self.slots.version)
        for slot in self.slots.slots:
            status = report.slots.add(slot_index=slot.index, allocation_id=slot.allocation_id,
                                      job_id=slot.job_id)
            fill_resource_spec(slot.profile, status.profile)
        return report

    def _send_heartbeats(self) -> None:
        timeout = self.config.get(options.HEARTBEAT_TIMEOUT)
        if not self._registering:
            message = resourcemanager_pb2.TaskExecutorHeartbeat(
                resource_manager_id=self.resource_manager_id, resource_id=self.resource_id,
                holds_partitions=self.partitions.holds_blocking_partitions())
            message.slot_report.CopyFrom(self.slot_report())

            def rm_done(fut: Any) -> None:
                if fut.exception() is None:
                    self.main.execute(self._rm_heartbeat_ok, fut.result().known)
            call_future(self._rm_stub.HeartbeatFromTaskExecutor, message,
                        self._timeout).add_done_callback(rm_done)
            if time.monotonic() - self._last_rm_ack > timeout:
                log.warning("ResourceManager silent for %.0f s: registering again", timeout)
                self._start_registration()
        for jm_id, (address, _) in self.slots.job_masters().items():
            self._jm_last_ack.setdefault(jm_id, time.monotonic())

            def jm_done(fut: Any, jm_id: str = jm_id) -> None:
                if fut.exception() is None:
                    self.main.execute(self._jm_last_ack.__setitem__, jm_id, time.monotonic())
            call_future(self._job_master_stub(address).HeartbeatFromTaskExecutor,
                        jobmaster_pb2.JobMasterHeartbeat(job_master_id=jm_id,
                                                         resource_id=self.resource_id),
                        self._timeout).add_done_callback(jm_done)
            if time.monotonic() - self._jm_last_ack[jm_id] > timeout:
                self._job_master_lost(jm_id, f"JobMaster silent for {timeout:g} s")

    def _rm_heartbeat_ok(self, known: bool) -> None:
        self._last_rm_ack = time.monotonic()
        if not known:
            log.warning("the ResourceManager does not know this executor: registering again")
            self._start_registration()

    def _job_master_lost(self, job_master_id: str, reason: str) -> None:
        log.warning("%s: freeing its slots", reason)
        self._jm_last_ack.pop(job_master_id, None)
        for slot in list(self.slots.slots):
            if slot.job_master_id == job_master_id:
                self.free_slot(slot.allocation_id, reason)

    def _job_master_stub(self, address: str) -> jobmaster_pb2_grpc.JobMasterStub:
        return jobmaster_pb2_grpc.JobMasterStub(self._channels.get(address))

    # --- calls from the ResourceManager and JobMasters (main thread) --------------------
    def request_slot(self, message: taskexecutor_pb2.RequestSlotMessage) -> tuple[str, int]:
        """Allocate and offer the slot; returns (error or '', slot table version)."""
        if message.resource_manager_id != self.resource_manager_id:
            return "stale ResourceManagerId (fencing): ignored", self.slots.version
        try:
            self.slots.allocate(message.slot_index, message.job_id, message.allocation_id,
                                message.job_master_id, message.job_master_address)
        except SlotStateError as err:
            return str(err), self.slots.version
        self._offer_slot(message)
        return "", self.slots.version

    def _offer_slot(self, message: taskexecutor_pb2.RequestSlotMessage) -> None:
        offer = jobmaster_pb2.OfferSlotsRequest(job_master_id=message.job_master_id)
        offer.location.CopyFrom(self.location())
        offer.offers.add(allocation_id=message.allocation_id, slot_index=message.slot_index,
                         profile=message.profile)
        allocation_id = message.allocation_id

        def done(fut: Any) -> None:
            err = fut.exception()
            accepted = err is None and allocation_id in fut.result().accepted
            self.main.execute(self._offer_answered, allocation_id, accepted,
                              describe_rpc_error(err) if err else "not accepted")
        call_future(self._job_master_stub(message.job_master_address).OfferSlots, offer,
                    self._timeout).add_done_callback(done)

    def _offer_answered(self, allocation_id: str, accepted: bool, why: str) -> None:
        if self.slots.by_allocation(allocation_id) is None:
            return
        if accepted:
            self.slots.activate(allocation_id)
        else:
            log.info("JobMaster declined slot %s (%s): freeing it", allocation_id[:8], why)
            self.free_slot(allocation_id, why)

    def submit_task(self, tdd: taskexecutor_pb2.TaskDeploymentDescriptor) -> str:
        task = Task(tdd, self._services, lambda t: self.main.execute(self._task_done, t))
        try:
            self.slots.add_task(tdd.allocation_id, tdd.job_master_id, tdd.attempt_id, task)
        except SlotStateError as err:
            return f"cannot run {task.name}: {err}"
        log.info("deploying %s (attempt %s) of job %s in slot %s", task.name,
                 task.attempt_id[:8], task.job_id[:8], tdd.allocation_id[:8])
        task.start()
        return ""

    def cancel_task(self, job_master_id: str, attempt_id: str) -> str:
        task = self.slots.find_task(attempt_id)
        if task is None:
            return ""   # already gone: cancelling is idempotent
        slot = self.slots.by_allocation(task.allocation_id)
        if slot is not None and slot.job_master_id != job_master_id:
            return "stale JobMasterId (fencing)"
        task.cancel()
        return ""

    def _task_done(self, task: Task) -> None:
        freed = self.slots.remove_task(task.allocation_id, task.attempt_id)
        if freed is not None:
            self._notify_slot_available(freed.index, task.allocation_id)

    def free_slot(self, allocation_id: str, cause: str,
                  job_master_id: str | None = None) -> tuple[str, "Future[Any] | None"]:
        """Returns an error (or '') and the ResourceManager's acknowledgement of the now
        free slot, which the caller may wait for so the slot is known free at once."""
        slot = self.slots.by_allocation(allocation_id)
        if slot is None:
            return "", None
        if job_master_id is not None and slot.job_master_id != job_master_id:
            return "stale JobMasterId (fencing)", None
        for task in list(slot.tasks.values()):
            task.cancel()
        index = slot.index
        if self.slots.free(allocation_id) is not None and not slot.tasks:
            return "", self._notify_slot_available(index, allocation_id)
        return "", None

    def _notify_slot_available(self, index: int, allocation_id: str) -> "Future[Any] | None":
        if not self.resource_manager_id:
            return None
        return call_future(self._rm_stub.NotifySlotAvailable, resourcemanager_pb2.SlotAvailable(
            resource_manager_id=self.resource_manager_id, resource_id=self.resource_id,
            slot_index=index, allocation_id=allocation_id), self._timeout)

    def release_job_partitions(self, job_id: str) -> None:
        self.partitions.release_job(job_id)
        shutil.rmtree(self.workdir / "partitions" / job_id, ignore_errors=True)

    def shutdown_requested(self, resource_manager_id: str, reason: str) -> str:
        if resource_manager_id != self.resource_manager_id:
            return "stale ResourceManagerId (fencing)"
        threading.Thread(target=self.stop, args=(reason,), daemon=True).start()
        return ""


def configure_logging(log_file: str | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_file:
        os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
        handlers = [logging.FileHandler(log_file)]
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
