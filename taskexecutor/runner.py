"""The process around a TaskExecutor (Flink's TaskManagerRunner): the mutual-TLS
control server, the data server, the channels its gateways use, the tasks' shared
services (partitions, Spark), and an orderly stop."""
from __future__ import annotations

import logging
import os
import shutil
import resource
import threading
from pathlib import Path
from typing import Any, Callable

from yarnflow.core.ids import JobID, JobMasterId, ResourceID
from yarnflow.taskexecutor.settings import TaskExecutorSettings
from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.messages import TaskExecutorLocation
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.channels import ChannelCache, start_server
from yarnflow.rpc.testing import fault_injector
from yarnflow.rpc.endpoint import MainThread
from yarnflow.rpc.gateways.jobmaster import GrpcJobMasterGateway
from yarnflow.rpc.gateways.resourcemanager import GrpcResourceManagerExecutorGateway
from yarnflow.rpc.generated import taskexecutor_pb2_grpc
from yarnflow.rpc.security import TlsCredentials
from yarnflow.appmaster.jobmaster.gateway import JobMasterGateway
from yarnflow.taskexecutor.job_master_outbox import TaskJobMasterGateway
from yarnflow.taskexecutor.network.data_server import DataClients, DataServer
from yarnflow.taskexecutor.network.partition_manager import ResultPartitionManager
from yarnflow.taskexecutor.memory_manager import MemoryManager
from yarnflow.taskexecutor.service import TaskExecutorService
from yarnflow.taskexecutor.shared_parts import SharedParts
from yarnflow.taskexecutor.straggler import slowdown_of
from yarnflow.taskexecutor.slot import TaskSlotTable
from yarnflow.taskexecutor.spark.session import SparkSessionHolder
from yarnflow.taskexecutor.streaming.stream_task import StreamTask
from yarnflow.taskexecutor.task import Task, TaskServices
from yarnflow.taskexecutor.taskexecutor import TaskExecutor

log = logging.getLogger(__name__)


class _Partitions:
    """The executor's result partitions, in memory and spilled under ``directory``."""

    def __init__(self, manager: ResultPartitionManager, directory: Path) -> None:
        self.manager = manager
        self.directory = directory

    def holds_blocking_partitions(self) -> bool:
        return self.manager.holds_blocking_partitions()

    def jobs_with_blocking_partitions(self) -> set[str]:
        return self.manager.jobs_with_blocking_partitions()

    def release_job(self, job_id: JobID) -> None:
        self.manager.release_job(job_id)
        shutil.rmtree(self.directory / job_id, ignore_errors=True)


class TaskExecutorRunner:
    def __init__(self, resource_id: ResourceID, rm_address: str, tls: TlsCredentials,
                 settings: TaskExecutorSettings, num_slots: int, slot_profile: ResourceSpec,
                 worker_spec: str, workdir: Path, host: str = "127.0.0.1") -> None:
        self.resource_id = resource_id
        self.host = host
        self.workdir = workdir
        self._tls = tls
        self._timeout = settings.rpc_timeout
        self._overhead_mb = settings.overhead_mb
        self._channels = ChannelCache(tls, fault_injector(
            settings.rpc_faults, settings.rpc_faults_seed, resource_id))
        self.stopped = threading.Event()
        self.stopped_cleanly = threading.Event()
        partitions = ResultPartitionManager()
        self._partitions = _Partitions(partitions, workdir / "partitions")
        self.data_server = DataServer(partitions, tls, host, settings.partition_request_timeout)
        self._services = TaskServices(
            resource_id, self.data_server.address, partitions, DataClients(tls), self._timeout,
            settings.partition_request_timeout, settings.buffers_per_channel,
            settings.batch_rows, workdir / "partitions",
            SparkSessionHolder(settings.spark, num_slots, slot_profile, str(workdir / "spark")),
            MemoryManager(slot_profile.memory_mb, settings.managed_memory_fraction),
            settings.filesystem, settings.non_recoverable_exceptions,
            slowdown_of(settings.slow_hosts, host), host in settings.failing_hosts)
        self._shared_parts = SharedParts(settings.filesystem)
        self.main = MainThread(f"taskexecutor-{resource_id}")
        self.endpoint = TaskExecutor(
            resource_id, settings, TaskSlotTable(num_slots, slot_profile), worker_spec,
            GrpcResourceManagerExecutorGateway(self._channels.get(rm_address), self._timeout),
            self._job_master, self._new_task, self._partitions, self.main,
            on_fatal=self.stop_async)
        self._server: Any = None

    def _job_master(self, address: str, job_master_id: JobMasterId) -> JobMasterGateway:
        return GrpcJobMasterGateway(self._channels.get(address), job_master_id, self._timeout)

    def _new_task(self, tdd: TaskDeploymentDescriptor, job_master: TaskJobMasterGateway,
                  on_done: Callable[[Any], None]) -> Task:
        if tdd.info.streaming:
            return StreamTask(tdd, self._services, job_master, on_done)
        return Task(tdd, self._services, job_master, on_done)

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        threading.Thread(target=self.data_server.serve, name="data-server", daemon=True).start()
        self._server, rpc_address = start_server(
            self._tls, lambda s: taskexecutor_pb2_grpc.add_TaskExecutorServicer_to_server(
                TaskExecutorService(self.endpoint, self._timeout, self._shared_parts), s),
            host=self.host)
        log.info("TaskExecutor %s serving control on %s, data on %s", self.resource_id,
                 rpc_address, self.data_server.address)
        self._report_own_memory()
        self.main.call(self.endpoint.start, TaskExecutorLocation(
            self.resource_id, self.host, rpc_address, self.data_server.address))

    def _report_own_memory(self) -> None:
        """What this process holds before any task (Python, pyarrow, gRPC, its servers'
        threads): the part of its container ``taskmanager.memory.overhead`` pays for,
        beside the slots. Past it, the slots' memory is what the executor's own process
        eats into, and a NodeManager may kill the container under load."""
        own_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024    # KB on Linux
        if own_mb > self._overhead_mb:
            log.warning("TaskExecutor %s holds %.0f MB before any task, more than "
                        "taskmanager.memory.overhead (%d MB): raise it, or its container may "
                        "be killed for its memory under load", self.resource_id, own_mb,
                        self._overhead_mb)
        else:
            log.info("TaskExecutor %s holds %.0f MB before any task "
                     "(taskmanager.memory.overhead: %d MB)", self.resource_id, own_mb,
                     self._overhead_mb)

    def wait(self) -> None:
        # A timed wait: Python runs signal handlers (SIGTERM) only between waits.
        while not self.stopped.wait(0.5):
            pass

    def stop_async(self, reason: str) -> None:
        """Stop from any thread, the main thread included, without waiting for it."""
        threading.Thread(target=self.stop, args=(reason,), name="stop", daemon=True).start()

    def stop(self, reason: str) -> None:
        if self.stopped.is_set():
            return
        try:
            self.main.call(self.endpoint.stop, reason, timeout=self._timeout)
        except Exception:   # noqa: BLE001 - a stuck main thread must not keep us up
            log.warning("the TaskExecutor's main thread did not stop in time")
        self.stopped.set()
        if self._server is not None:
            self._server.stop(grace=1.0)
        self.data_server.shutdown()
        self._services.spark.stop()
        self._channels.close()
        self.main.shutdown()
        shutil.rmtree(self.workdir / "partitions", ignore_errors=True)
        self.stopped_cleanly.set()


def configure_logging(log_file: str | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_file:
        os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
        handlers = [logging.FileHandler(log_file)]
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
