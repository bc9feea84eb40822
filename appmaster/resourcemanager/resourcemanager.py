"""The ResourceManager (seed 004): registered TaskExecutors and their slots, JobMasters
asking for slots, and a driver that starts and stops workers.

Its lifetime is independent of any job. Executors idle past
``resourcemanager.taskmanager-timeout`` are stopped; an executor that dies or falls
silent is unregistered and every JobMaster with slots on it is told why. A worker the
cluster has not placed within ``resourcemanager.node-report.interval`` is checked
against what each live host has free (fit_check.py): it waits for room without being
asked again, idle executors make room for it, or its requests fail when no host could
ever hold it.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from yarnflow.appmaster.resourcemanager.settings import ResourceManagerSettings
from yarnflow.appmaster.blocklist import Blocklist
from yarnflow.appmaster.resourcemanager.delegation_tokens import (
    DelegationTokenManager, TokenDistribution, TokenProvider)
from yarnflow.appmaster.jobmaster.gateway import JobMasterGateway
from yarnflow.appmaster.resourcemanager.capacity_check import CapacityCheck
from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver
from yarnflow.appmaster.resourcemanager.slotmanager import PendingSlotRequest, SlotManager
from yarnflow.conf import Configuration
from yarnflow.core.container_ladder import ContainerLadder, NoContainerFits
from yarnflow.core.errors import (FencingError, NotRegisteredYet, Refused, UnknownExecutor,
                                  UnknownJob)
from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.details import ExecutorDetails
from yarnflow.core.fs.tokens import CREDENTIALS, HadoopToken, ProcessCredentials
from yarnflow.core.ids import AllocationID, JobID, JobMasterId, ResourceID, ResourceManagerId
from yarnflow.core.messages import (ClusterOverview, SlotAllocation, SlotReport, SlotRequest,
                                    TaskExecutorLocation, TaskExecutorRegistration, WorkerInfo)
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.rpc.endpoint import MainThread, MainThreadExecutor, describe_rpc_error
from yarnflow.taskexecutor.gateway import TaskExecutorGateway

log = logging.getLogger(__name__)

# How soon a slot request goes again to an executor still awaiting its registration's answer.
NOT_REGISTERED_RETRY_S = 0.05

# (location, this ResourceManager's id) -> a gateway fenced with that id
TaskExecutorGatewayFactory = Callable[[TaskExecutorLocation, ResourceManagerId], TaskExecutorGateway]
# (JobMaster address, JobMasterId) -> a gateway fenced with that id
JobMasterGatewayFactory = Callable[[str, JobMasterId], JobMasterGateway]


@dataclass
class RegisteredExecutor:
    location: TaskExecutorLocation
    worker_spec: str
    gateway: TaskExecutorGateway
    last_heartbeat: float


@dataclass
class RegisteredJobMaster:
    job_id: JobID
    job_master_id: JobMasterId
    address: str
    gateway: JobMasterGateway


class ResourceManager:
    def __init__(self, config: Configuration, driver: ResourceDriver,
                 task_executor_gateways: TaskExecutorGatewayFactory,
                 job_master_gateways: JobMasterGatewayFactory,
                 min_workers: int = 0,
                 worker_specs: dict[ResourceSpec, WorkerSpec] | None = None,
                 ladder: ContainerLadder | None = None,
                 main: MainThreadExecutor | None = None,
                 token_provider: TokenProvider | None = None,
                 credentials: ProcessCredentials = CREDENTIALS) -> None:
        self.settings = settings = ResourceManagerSettings.of(config)   # read once, here
        self.driver = driver
        self.resource_manager_id = ResourceManagerId(uuid.uuid4().hex)
        self.main: MainThreadExecutor = main or MainThread("resourcemanager")
        self._clock = self.main.clock
        self._te_gateways = task_executor_gateways
        self._jm_gateways = job_master_gateways
        self._min_workers = min_workers
        # every job's blocked hosts, for the whole cluster (yarnflow.appmaster.blocklist)
        self.blocklist = Blocklist(self._clock)
        self.slot_manager = SlotManager(
            self, settings.num_task_slots, settings.worker_overhead_mb,
            settings.max_workers, settings.taskmanager_timeout,
            worker_specs, ladder, clock=self._clock, blocklist=self.blocklist)
        self.executors: dict[ResourceID, RegisteredExecutor] = {}
        self.job_masters: dict[JobID, RegisteredJobMaster] = {}
        self._start_failures = 0
        self._stopped: set[ResourceID] = set()
        self._checks: Any = None
        self.address = ""
        # renewed delegation tokens, and which executor holds which (delegation_tokens.py)
        self.tokens = TokenDistribution()
        self.token_manager = DelegationTokenManager(
            self.main, credentials, token_provider, settings.renewal, self._tokens_renewed)
        # workers YARN has not placed, checked against what each live host has free
        self.capacity = CapacityCheck(settings.node_report_interval, self.main,
                                      driver, self.slot_manager, min_workers, self.stop_worker)

    def start(self, address: str) -> None:
        """Begin serving; ``address`` is where this ResourceManager's gRPC service is."""
        self.address = address
        self.driver.start(self, address)
        interval = min(self.settings.heartbeat_interval, self.settings.taskmanager_timeout / 4, 1.0)
        self._checks = self.main.schedule_periodic(max(0.05, interval), self._periodic_checks)
        self.main.execute(self.token_manager.start)

    def stop(self) -> None:
        if self._checks is not None:
            self._checks.cancel()
        self.main.execute(self.token_manager.stop)
        self.driver.stop()
        self.main.shutdown()

    def check_fencing(self, token: str) -> None:
        if token != self.resource_manager_id:
            raise FencingError("stale ResourceManagerId: register with the current "
                               "ResourceManager")

    # --- TaskExecutors ---------------------------------------------------------------
    def task_executor_gateway(self, location: TaskExecutorLocation) -> TaskExecutorGateway:
        """Any thread: the gateway a registration will use, made before the registration
        reaches the main thread. Making it dials a mutual-TLS channel, and a thousand
        executors registering at once made that most of the main thread's work."""
        return self._te_gateways(location, self.resource_manager_id)

    def register_task_executor(self, registration: TaskExecutorRegistration,
                               gateway: TaskExecutorGateway | None = None) -> str:
        """Returns this ResourceManager's id, the token its calls to the executor carry."""
        location = registration.location
        gateway = gateway or self.task_executor_gateway(location)
        resource_id = location.resource_id
        if resource_id in self._stopped:
            raise Refused(f"TaskExecutor {resource_id} was stopped by this ResourceManager "
                          "and may not register again")
        slots = registration.slot_report.slots
        known = self.executors.get(resource_id)
        if known is not None and resource_id in self.slot_manager.workers:
            # The same executor again (FLIP-6's message 10: the answer to its registration
            # was lost, or it stopped hearing from us): recognised by its ResourceID, it
            # keeps its place and its slot report is taken as its truth. Dropping and
            # re-adding it would put its slot requests back in the queue and start a
            # worker for them that nobody needs.
            self.executors[resource_id] = RegisteredExecutor(
                location, registration.worker_spec,
                gateway, self._clock.monotonic())
            self.slot_manager.report_slot_status(
                resource_id, [(s.slot_index, s.allocation_id, s.job_id) for s in slots],
                self.slot_manager.workers[resource_id].holds_partitions,
                registration.slot_report.version)
            log.info("TaskExecutor %s registered again", resource_id)
            self.tokens.forget(resource_id)     # it may have restarted with its container's
            self.tokens.sync(resource_id, gateway, self.main)
            return self.resource_manager_id
        profile = slots[0].profile if slots else registration.total_resources
        if profile is None:
            raise Refused(f"TaskExecutor {resource_id} reported neither slots nor resources")
        self.executors[resource_id] = RegisteredExecutor(
            location, registration.worker_spec,
            gateway, self._clock.monotonic())
        self._start_failures = 0
        self.slot_manager.register_worker(
            resource_id, profile, len(slots),
            [(s.slot_index, s.allocation_id, s.job_id) for s in slots],
            registration.slot_report.version, location.host)
        log.info("TaskExecutor %s registered (%d slots of %s, worker spec %s)", resource_id,
                 len(slots), profile, registration.worker_spec)
        self.tokens.forget(resource_id)
        self.tokens.sync(resource_id, gateway, self.main)
        return self.resource_manager_id

    def receive_heartbeat(self, resource_id: ResourceID, resource_manager_id: ResourceManagerId,
                          report: SlotReport, holds_partitions: bool) -> None:
        """Any thread: answer a heartbeat at once and reconcile its slot report on the
        main thread later (FLINK-13184: a thousand executors' heartbeats queued behind a
        deployment were answered seconds late). Raises UnknownExecutor (or
        FencingError): the executor must register again. ``executors`` changes only on
        the main thread; reading it here sees it before or after a change, and a report
        of an executor gone by the time it is reconciled is dropped there."""
        self.check_fencing(resource_manager_id)
        if resource_id not in self.executors:
            raise UnknownExecutor(f"TaskExecutor {resource_id} is not registered with this "
                                  "ResourceManager")
        self.main.execute(self._reconcile_heartbeat, resource_id, resource_manager_id, report,
                          holds_partitions)

    def _reconcile_heartbeat(self, resource_id: ResourceID, resource_manager_id: ResourceManagerId,
                             report: SlotReport, holds_partitions: bool) -> None:
        try:
            self.heartbeat_from_task_executor(resource_id, resource_manager_id, report,
                                              holds_partitions)
        except (UnknownExecutor, FencingError) as gone:
            log.debug("a heartbeat's slot report is not reconciled: %s", gone)

    def heartbeat_from_task_executor(self, resource_id: ResourceID, resource_manager_id: ResourceManagerId,
                                     report: SlotReport, holds_partitions: bool) -> None:
        """Raises UnknownExecutor (or FencingError): the executor must register again."""
        self.check_fencing(resource_manager_id)
        executor = self.executors.get(resource_id)
        if executor is None:
            raise UnknownExecutor(f"TaskExecutor {resource_id} is not registered with this "
                                  "ResourceManager")
        executor.last_heartbeat = self._clock.monotonic()
        self.tokens.sync(resource_id, executor.gateway, self.main)
        self.slot_manager.report_slot_status(
            resource_id, [(s.slot_index, s.allocation_id, s.job_id) for s in report.slots],
            holds_partitions, report.version)

    def _tokens_renewed(self, tokens: list[HadoopToken]) -> None:
        """The token manager's new tokens, to every registered executor."""
        self.tokens.renewed(tokens)
        for resource_id, executor in self.executors.items():
            self.tokens.sync(resource_id, executor.gateway, self.main)

    def notify_slot_available(self, resource_id: ResourceID, slot_index: int, allocation_id: AllocationID) -> None:
        self.slot_manager.free_slot(resource_id, slot_index, allocation_id)

    def on_worker_terminated(self, resource_id: ResourceID, cause: str,
                             spec_fault: bool = True) -> None:
        """Driver callback (any thread): a worker process or container ended."""
        self.main.execute(self._worker_terminated, resource_id, cause, spec_fault)

    def on_worker_moved(self, resource_id: ResourceID, new_resource_id: ResourceID) -> None:
        """Driver callback (any thread): a worker YARN did not place on its host in time
        is asked anywhere; the requests it was to serve wait for the new one."""
        self.main.execute(self.slot_manager.worker_moved, resource_id, new_resource_id)

    def _worker_terminated(self, resource_id: ResourceID, cause: str,
                           spec_fault: bool = True) -> None:
        if resource_id in self.slot_manager.pending_workers and not spec_fault:
            # its host was lost, YARN preempted it, the cluster answered late: nothing
            # wrong with the spec, so the requests it was to serve are asked again (the
            # driver passes lost hosts by) without counting toward the limit
            log.warning("worker %s did not start (%s); asking again", resource_id, cause)
            self.slot_manager.worker_start_failed(resource_id, cause, give_up=False)
            self.main.schedule(self.settings.worker_retry_interval,
                               self.slot_manager.match_waiting_requests)
            return
        if resource_id in self.slot_manager.pending_workers:
            self._start_failures += 1
            give_up = self._start_failures > self.settings.worker_max_start_failures
            log.warning("worker %s failed to start (%s); %d failed starts in a row", resource_id,
                        cause, self._start_failures)
            self.slot_manager.worker_start_failed(
                resource_id, f"TaskExecutor {resource_id} failed to start: {cause} "
                f"({self._start_failures} failures in a row, more than "
                "resourcemanager.start-worker-max-failures)", give_up)
            # back off exponentially while starts keep failing (a bad node, a full queue)
            delay = min(self.settings.worker_retry_interval
                        * 2 ** (self._start_failures - 1), 60.0)
            self.main.schedule(delay, self.slot_manager.match_waiting_requests)
            return
        self.close_task_executor(resource_id, f"TaskExecutor {resource_id} was lost: {cause}")

    def close_task_executor(self, resource_id: ResourceID, reason: str) -> None:
        """Every JobMaster hears of the loss, not only those with slots there: a job
        whose finished results the executor held must run their producers again."""
        executor = self.executors.pop(resource_id, None)
        self.slot_manager.unregister_worker(resource_id)
        if executor is None:
            return
        log.warning("%s", reason)
        for jm in self.job_masters.values():
            jm.gateway.disconnect_task_executor(resource_id, reason)

    # --- JobMasters ------------------------------------------------------------------
    def register_job_master(self, job_id: JobID, job_master_id: JobMasterId, address: str) -> ResourceManagerId:
        self.job_masters[job_id] = RegisteredJobMaster(
            job_id, job_master_id, address, self._jm_gateways(address, job_master_id))
        return self.resource_manager_id

    def disconnect_job_master(self, job_id: JobID, job_master_id: JobMasterId) -> None:
        jm = self.job_masters.get(job_id)
        if jm is not None and jm.job_master_id == job_master_id:
            del self.job_masters[job_id]
            for allocation_id, request in list(self.slot_manager.requests.items()):
                if request.job_id == job_id:
                    self.slot_manager.cancel_slot_request(allocation_id)

    def request_slot(self, request: SlotRequest) -> None:
        """Take a slot request (idempotent per AllocationID), or refuse it: an unknown
        or stale JobMaster, or a profile no container this cluster gives can hold."""
        jm = self.job_masters.get(request.job_id)
        if jm is None:
            raise UnknownJob(f"job {request.job_id} has no JobMaster registered with this "
                             "ResourceManager")
        if jm.job_master_id != request.job_master_id:
            raise FencingError(f"job {request.job_id}: stale JobMasterId")
        try:
            spec = self.slot_manager.worker_spec_for(request.profile, request.wanted)
        except NoContainerFits as err:
            raise Refused(str(err)) from None
        largest = self.driver.max_worker_resources()
        if not spec.container.within(largest):
            raise Refused(f"a slot of {request.profile} needs a container of {spec.container}, "
                          f"larger than the largest this cluster gives ({largest})")
        self.slot_manager.request_slot(PendingSlotRequest(
            request.allocation_id, request.job_id, request.job_master_id,
            request.job_master_address, request.profile, request.preferred_hosts,
            request.exact, request.wanted))

    def cancel_slot_request(self, allocation_id: AllocationID) -> None:
        self.slot_manager.cancel_slot_request(allocation_id)

    def block_nodes(self, nodes: list[BlockedNode]) -> list[str]:
        """A job would block these hosts: their free slots are not given out, and no
        worker is started there, until each one's time is up. Returns the hosts blocked
        now. The last host not blocked of those the cluster has (its executors', and
        YARN's NodeManagers the application may ask on) is not: a failure that follows
        a job everywhere is its restart strategy's to end, not a reason to stall it."""
        known = {e.location.host for e in self.executors.values()} | self.driver.worker_hosts()
        accepted = []
        for node in nodes:
            blocked = self.blocklist.hosts()
            if node.host not in blocked and not known - blocked - {node.host}:
                log.warning("not blocking host %s (%s): no other host is left to run on",
                            node.host, node.cause)
                continue
            for new in self.blocklist.add([node]):
                log.warning("host %s is blocked until %s: %s", new.host,
                            time.strftime("%H:%M:%S", time.localtime(new.until)), new.cause)
            accepted.append(node.host)
        return accepted

    # --- SlotManagerActions ----------------------------------------------------------
    def start_worker(self, spec: WorkerSpec, hosts: tuple[str, ...] = ()) -> ResourceID:
        blocked = self.blocklist.hosts()
        return self.driver.request_worker(spec, tuple(h for h in hosts if h not in blocked),
                                          avoid=blocked)

    def stop_worker(self, resource_id: ResourceID, reason: str) -> None:
        self._stopped.add(resource_id)
        executor = self.executors.pop(resource_id, None)
        self.slot_manager.unregister_worker(resource_id)
        log.info("stopping TaskExecutor %s: %s", resource_id, reason)
        if executor is not None:
            executor.gateway.shutdown(reason)
            self.driver.release_worker(resource_id)

    def allocate_slot(self, resource_id: ResourceID, slot_index: int, request: PendingSlotRequest) -> None:
        executor = self.executors[resource_id]
        allocation = SlotAllocation(slot_index, JobID(request.job_id),
                                    AllocationID(request.allocation_id), request.profile,
                                    JobMasterId(request.job_master_id),
                                    request.job_master_address)

        def done(fut: Any) -> None:
            err = fut.exception()
            if err is None:
                self.main.execute(self.slot_manager.allocation_confirmed, request.allocation_id,
                                  fut.result())
            elif isinstance(err, NotRegisteredYet):
                self.main.schedule(NOT_REGISTERED_RETRY_S, self._allocate_again, resource_id,
                                   slot_index, request)
            else:
                self.main.execute(self.slot_manager.allocation_refused, request.allocation_id,
                                  describe_rpc_error(err))
        executor.gateway.request_slot(allocation).add_done_callback(done)

    def _allocate_again(self, resource_id: ResourceID, slot_index: int, request: PendingSlotRequest) -> None:
        """The executor had not yet heard it is registered; the slot is still reserved
        for the request unless something changed meanwhile."""
        if resource_id in self.executors and request.assigned == (resource_id, slot_index) \
                and request.allocation_id in self.slot_manager.requests:
            self.allocate_slot(resource_id, slot_index, request)

    def notify_allocation_failure(self, request: PendingSlotRequest, cause: str) -> None:
        jm = self.job_masters.get(request.job_id)
        if jm is not None:
            jm.gateway.notify_allocation_failure(request.allocation_id, cause)

    # --- periodic --------------------------------------------------------------------
    def _periodic_checks(self) -> None:
        now = self._clock.monotonic()
        timeout = self.settings.heartbeat_timeout
        for resource_id, executor in list(self.executors.items()):
            if now - executor.last_heartbeat > timeout:
                self._stopped.add(resource_id)
                self.driver.release_worker(resource_id)
                self.close_task_executor(resource_id, (
                    f"TaskExecutor {resource_id} sent no heartbeat for {timeout:g} s "
                    "(heartbeat.timeout): it is presumed dead"))
        start_timeout = self.settings.worker_start_timeout
        for resource_id, pending in list(self.slot_manager.pending_workers.items()):
            if now - pending.requested_at > start_timeout and \
                    resource_id not in self.capacity.waits:
                self.driver.release_worker(resource_id)
                # slow, not wrong: a host localizing a large environment for the first
                # time, YARN or Skein answering late; a worker that never comes is ended
                # by its requests' slot.request.timeout
                self._worker_terminated(resource_id, f"it did not register within "
                                        f"{start_timeout:g} s (resourcemanager.worker.start-timeout)",
                                        spec_fault=False)
        for resource_id in self.slot_manager.idle_workers(keep=self._min_workers):
            self.stop_worker(resource_id, "idle longer than resourcemanager.taskmanager-timeout")
        warm = self.slot_manager.warm_spec
        if warm is not None:
            for _ in range(self.slot_manager.warm_missing(self._min_workers)):
                resource_id = self.start_worker(warm)
                self.slot_manager.add_starting_worker(resource_id, warm, warm=True)
                log.info("starting a warm %s executor (%s): --min-executors %d", warm.name,
                         resource_id, self._min_workers)
        self.capacity.check(now)

    def executor_details(self) -> list[ExecutorDetails]:
        """Registered executors, then those still starting; on the main thread."""
        details = []
        for resource_id, worker in self.slot_manager.workers.items():
            executor = self.executors.get(resource_id)
            spec = worker.spec
            details.append(ExecutorDetails(
                resource_id, "REGISTERED", spec.name if spec else
                (executor.worker_spec if executor else ""),
                spec.container if spec else None,
                worker.slots[0].profile if worker.slots else None, len(worker.slots),
                worker.busy_slots(), executor.location.host if executor else ""))
        for resource_id, pending in self.slot_manager.pending_workers.items():
            details.append(ExecutorDetails(
                resource_id, "STARTING", pending.spec.name, pending.spec.container,
                pending.spec.slot_profile, pending.spec.num_slots, 0,
                waiting=self.capacity.waits.get(resource_id, "")))
        return details

    def overview(self) -> ClusterOverview:
        workers = []
        for resource_id, worker in self.slot_manager.workers.items():
            executor = self.executors.get(resource_id)
            workers.append(WorkerInfo(
                ResourceID(resource_id), worker.spec.name if worker.spec else "",
                worker.slots[0].profile if worker.slots else None, len(worker.slots),
                len(worker.slots) - worker.busy_slots(),
                executor.location.rpc_address if executor else "",
                executor.location.data_address if executor else ""))
        return ClusterOverview(tuple(workers), len(self.slot_manager.pending_workers),
                               len(self.slot_manager.requests),
                               dict(self.slot_manager.started_per_spec),
                               self.token_manager.status())
