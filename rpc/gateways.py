"""gRPC-backed gateways: one component's handle on another, returning futures.

Calls never block the caller's main thread. A refusal (a status carrying a refusal
kind, or an ``Ack`` with ``ok=false`` from a service that still answers that way)
surfaces as a ``yarnflow.core.errors.Refused``; a transport failure as ``grpc.RpcError``.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable, TypeVar

import grpc

from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.details import JobDetails, SessionOverview
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.errors import Refused
from yarnflow.core.messages import (AskAgain, SlotAllocation, SlotOffer, SlotReport, SplitAnswer,
                                    TaskExecutionState, TaskExecutorLocation,
                                    TaskExecutorRegistration)
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.generated import (common_pb2, dispatcher_pb2, dispatcher_pb2_grpc,
                                    jobmaster_pb2, jobmaster_pb2_grpc,
                                    resourcemanager_pb2, resourcemanager_pb2_grpc,
                                    taskexecutor_pb2, taskexecutor_pb2_grpc)
from yarnflow.rpc.codec import (fill_location, fill_resource_spec, fill_slot_report,
                                job_details_from_proto, jobgraph_to_proto, registration_to_proto,
                                session_overview_from_proto, task_execution_state_to_proto,
                                tdd_to_bytes)
from yarnflow.rpc.errors import refusal_of


T = TypeVar("T")


def call_future(method: Any, request: Any, timeout: float) -> "Future[Any]":
    """Start ``method.future(request)``; a call that cannot even start (closed channel)
    becomes a failed future instead of an exception in the caller's main thread."""
    try:
        return to_future(method.future(request, timeout=timeout))
    except Exception as err:
        failed: Future[Any] = Future()
        failed.set_exception(err)
        return failed


def to_future(call: "grpc.Future") -> "Future[Any]":
    out: Future[Any] = Future()

    def done(fut: "grpc.Future") -> None:
        try:
            result = fut.result()
        except Exception as err:
            out.set_exception(refusal_of(err) or err)
            return
        if isinstance(result, (common_pb2.Ack, taskexecutor_pb2.SlotAllocationReply)) \
                and not result.ok:
            out.set_exception(Refused(result.message))
        else:
            out.set_result(result)
    call.add_done_callback(done)
    return out


class GrpcTaskExecutorGateway:
    """A handle on one TaskExecutor, fenced with its caller's token: a JobMaster's
    JobMasterId, or the ResourceManager's ResourceManagerId."""

    def __init__(self, channel: grpc.Channel, job_master_id: str, timeout: float,
                 resource_manager_id: str = "") -> None:
        self._stub = taskexecutor_pb2_grpc.TaskExecutorStub(channel)
        # deployment descriptors are put in wire form by the codec (shared parts once for
        # all subtasks), so this call takes them as bytes
        self._submit_task = channel.unary_unary(
            "/yarnflow.TaskExecutor/SubmitTask", request_serializer=None,
            response_deserializer=common_pb2.Ack.FromString)
        self._jm_id = job_master_id
        self._rm_id = resource_manager_id
        self._timeout = timeout

    def request_slot(self, allocation: SlotAllocation) -> "Future[int]":
        message = taskexecutor_pb2.RequestSlotMessage(
            resource_manager_id=self._rm_id, slot_index=allocation.slot_index,
            job_id=allocation.job_id, allocation_id=allocation.allocation_id,
            job_master_address=allocation.job_master_address,
            job_master_id=allocation.job_master_id)
        fill_resource_spec(allocation.profile, message.profile)
        return _then(call_future(self._stub.RequestSlot, message, self._timeout),
                     lambda reply: int(reply.report_version))

    def shutdown(self, reason: str) -> "Future[None]":
        return _then(call_future(self._stub.Shutdown, taskexecutor_pb2.ShutdownMessage(
            resource_manager_id=self._rm_id, reason=reason), self._timeout), lambda _: None)

    def submit_task(self, descriptor: TaskDeploymentDescriptor) -> "Future[Any]":
        return call_future(self._submit_task, tdd_to_bytes(descriptor), self._timeout)

    def cancel_task(self, attempt_id: str) -> "Future[Any]":
        return call_future(self._stub.CancelTask, taskexecutor_pb2.CancelTaskMessage(
            job_master_id=self._jm_id, attempt_id=attempt_id), self._timeout)

    def free_slot(self, allocation_id: str, cause: str) -> "Future[Any]":
        return call_future(self._stub.FreeSlot, taskexecutor_pb2.FreeSlotMessage(
            job_master_id=self._jm_id, allocation_id=allocation_id, cause=cause), self._timeout)

    def release_job_partitions(self, job_id: str) -> "Future[Any]":
        return call_future(self._stub.ReleaseJobPartitions, taskexecutor_pb2.ReleasePartitionsMessage(
            job_master_id=self._jm_id, job_id=job_id), self._timeout)


class GrpcResourceManagerGateway:
    """A JobMaster's handle on the ResourceManager, fenced both ways."""

    def __init__(self, channel: grpc.Channel, resource_manager_id: str, job_id: str,
                 job_master_id: str, job_master_address: str, timeout: float) -> None:
        self._stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
        self._rm_id = resource_manager_id
        self._job_id = job_id
        self._jm_id = job_master_id
        self._jm_address = job_master_address
        self._timeout = timeout

    def request_slot(self, allocation_id: str, profile: ResourceSpec) -> "Future[Any]":
        request = resourcemanager_pb2.SlotRequest(
            resource_manager_id=self._rm_id, job_id=self._job_id, job_master_id=self._jm_id,
            allocation_id=allocation_id, job_master_address=self._jm_address)
        fill_resource_spec(profile, request.profile)
        return call_future(self._stub.RequestSlot, request, self._timeout)

    def cancel_slot_request(self, allocation_id: str) -> "Future[Any]":
        return call_future(self._stub.CancelSlotRequest, resourcemanager_pb2.CancelSlotRequestMessage(
            resource_manager_id=self._rm_id, job_master_id=self._jm_id,
            allocation_id=allocation_id), self._timeout)

    def disconnect_job_master(self, reason: str) -> "Future[Any]":
        return call_future(self._stub.DisconnectJobMaster, resourcemanager_pb2.DisconnectRequest(
            resource_manager_id=self._rm_id, id=self._job_id, job_master_id=self._jm_id,
            reason=reason), self._timeout)


class GrpcResourceManagerExecutorGateway:
    """A TaskExecutor's handle on the ResourceManager."""

    def __init__(self, channel: grpc.Channel, timeout: float) -> None:
        self._stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
        self._timeout = timeout

    def register_task_executor(self, registration: TaskExecutorRegistration) -> "Future[str]":
        def accepted(reply: Any) -> str:
            if not reply.accepted:
                raise Refused(reply.reason)
            return str(reply.resource_manager_id)
        return _then(call_future(self._stub.RegisterTaskExecutor,
                                 registration_to_proto(registration), self._timeout), accepted)

    def heartbeat_from_task_executor(self, resource_manager_id: str, resource_id: str,
                                     report: SlotReport, holds_partitions: bool) -> "Future[bool]":
        message = resourcemanager_pb2.TaskExecutorHeartbeat(
            resource_manager_id=resource_manager_id, resource_id=resource_id,
            holds_partitions=holds_partitions)
        fill_slot_report(report, message.slot_report)
        return _then(call_future(self._stub.HeartbeatFromTaskExecutor, message, self._timeout),
                     lambda reply: bool(reply.known))

    def notify_slot_available(self, resource_manager_id: str, resource_id: str,
                              slot_index: int, allocation_id: str) -> "Future[None]":
        return _then(call_future(self._stub.NotifySlotAvailable, resourcemanager_pb2.SlotAvailable(
            resource_manager_id=resource_manager_id, resource_id=resource_id,
            slot_index=slot_index, allocation_id=allocation_id), self._timeout), lambda _: None)


class GrpcJobMasterGateway:
    """A handle on one JobMaster, fenced with its JobMasterId: the ResourceManager's,
    or an executor's and its tasks'."""

    def __init__(self, channel: grpc.Channel, job_master_id: str, timeout: float) -> None:
        self._stub = jobmaster_pb2_grpc.JobMasterStub(channel)
        self._jm_id = job_master_id
        self._timeout = timeout

    def disconnect_task_executor(self, resource_id: str, reason: str) -> "Future[None]":
        return _then(call_future(self._stub.DisconnectTaskExecutor,
                                 jobmaster_pb2.TaskExecutorDisconnect(
                                     job_master_id=self._jm_id, resource_id=resource_id,
                                     reason=reason), self._timeout), lambda _: None)

    def notify_allocation_failure(self, allocation_id: str, cause: str) -> "Future[None]":
        return _then(call_future(self._stub.NotifyAllocationFailure,
                                 jobmaster_pb2.AllocationFailure(
                                     job_master_id=self._jm_id, allocation_id=allocation_id,
                                     cause=cause), self._timeout), lambda _: None)

    def offer_slots(self, location: TaskExecutorLocation,
                    offers: list[SlotOffer]) -> "Future[list[str]]":
        message = jobmaster_pb2.OfferSlotsRequest(job_master_id=self._jm_id)
        fill_location(location, message.location)
        for offer in offers:
            fill_resource_spec(offer.profile, message.offers.add(
                allocation_id=offer.allocation_id, slot_index=offer.slot_index).profile)
        return _then(call_future(self._stub.OfferSlots, message, self._timeout),
                     lambda reply: list(reply.accepted))

    def heartbeat_from_task_executor(self, resource_id: str) -> "Future[None]":
        return _then(call_future(self._stub.HeartbeatFromTaskExecutor,
                                 jobmaster_pb2.JobMasterHeartbeat(job_master_id=self._jm_id,
                                                                  resource_id=resource_id),
                                 self._timeout), lambda _: None)

    def update_task_execution_state(self, update: TaskExecutionState) -> "Future[None]":
        return _then(call_future(self._stub.UpdateTaskExecutionState,
                                 task_execution_state_to_proto(self._jm_id, update),
                                 self._timeout), lambda _: None)

    def notify_partition_data_available(self, attempt_id: str, result_id: str) -> "Future[None]":
        return _then(call_future(self._stub.NotifyPartitionDataAvailable,
                                 jobmaster_pb2.PartitionDataAvailable(
                                     job_master_id=self._jm_id, attempt_id=attempt_id,
                                     result_id=result_id), self._timeout), lambda _: None)

    def request_next_input_split(self, vertex_id: str, attempt_id: str) -> "Future[SplitAnswer]":
        def answer(reply: Any) -> SplitAnswer:
            if reply.retry_after_s > 0:
                return AskAgain(reply.retry_after_s)
            return None if reply.end else bytes(reply.split)
        return _then(call_future(self._stub.RequestNextInputSplit, jobmaster_pb2.InputSplitRequest(
            job_master_id=self._jm_id, vertex_id=vertex_id, attempt_id=attempt_id),
            self._timeout), answer)


def _then(future: "Future[Any]", convert: Callable[[Any], T]) -> "Future[T]":
    """``future``'s reply converted from its message to what the gateway promises."""
    out: Future[T] = Future()

    def done(fut: "Future[Any]") -> None:
        err = fut.exception()
        if err is not None:
            out.set_exception(err)
            return
        try:
            out.set_result(convert(fut.result()))
        except Exception as failed:   # noqa: BLE001 - a reply that says no
            out.set_exception(failed)
    future.add_done_callback(done)
    return out


def register_job_master(channel: grpc.Channel, job_id: str, job_master_id: str, address: str,
                        timeout: float) -> str:
    """Register a JobMaster with the ResourceManager; returns the ResourceManagerId."""
    stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
    reply = stub.RegisterJobMaster(resourcemanager_pb2.RegisterJobMasterRequest(
        job_id=job_id, job_master_id=job_master_id, address=address), timeout=timeout)
    return reply.resource_manager_id


class GrpcDispatcherGateway:
    """A client's handle on an ApplicationMaster's Dispatcher (a session's, or the
    per-job one that serves its single job)."""

    def __init__(self, channel: grpc.Channel, timeout: float) -> None:
        self._stub = dispatcher_pb2_grpc.DispatcherStub(channel)
        self._timeout = timeout

    def submit_job(self, graph: JobGraph) -> "Future[str]":
        return _then(call_future(self._stub.SubmitJob, jobgraph_to_proto(graph), self._timeout),
                     lambda reply: str(reply.job_id))

    def list_jobs(self) -> "Future[list[JobDetails]]":
        return _then(call_future(self._stub.ListJobs, common_pb2.Empty(), self._timeout),
                     lambda reply: [job_details_from_proto(d) for d in reply.jobs])

    def request_job_details(self, job_id: str) -> "Future[JobDetails]":
        return _then(call_future(self._stub.GetJobDetails, jobmaster_pb2.JobId(job_id=job_id),
                                 self._timeout), job_details_from_proto)

    def cancel_job(self, job_id: str) -> "Future[None]":
        return _then(call_future(self._stub.CancelJob, jobmaster_pb2.JobId(job_id=job_id),
                                 self._timeout), lambda _: None)

    def request_overview(self) -> "Future[SessionOverview]":
        return _then(call_future(self._stub.GetOverview, common_pb2.Empty(), self._timeout),
                     session_overview_from_proto)

    def shutdown(self, reason: str) -> "Future[None]":
        return _then(call_future(self._stub.Shutdown,
                                 dispatcher_pb2.ShutdownRequest(reason=reason), self._timeout),
                     lambda _: None)
