"""gRPC-backed gateways: one component's handle on another, returning futures.

Calls never block the caller's main thread. A refusal (a status carrying a refusal
kind, or an ``Ack`` with ``ok=false`` from a service that still answers that way)
surfaces as a ``yarnflow.core.errors.Refused``; a transport failure as ``grpc.RpcError``.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable, TypeVar

import grpc

from yarnflow.core.errors import Refused
from yarnflow.core.messages import SlotAllocation
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.generated import (common_pb2, jobmaster_pb2, jobmaster_pb2_grpc,
                                    resourcemanager_pb2, resourcemanager_pb2_grpc,
                                    taskexecutor_pb2, taskexecutor_pb2_grpc)
from yarnflow.rpc.codec import fill_resource_spec
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

    def submit_task(self, descriptor: taskexecutor_pb2.TaskDeploymentDescriptor) -> "Future[Any]":
        return call_future(self._stub.SubmitTask, descriptor, self._timeout)

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


class GrpcJobMasterGateway:
    """The ResourceManager's handle on one JobMaster, fenced with its JobMasterId."""

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


def _then(future: "Future[Any]", convert: Callable[[Any], T]) -> "Future[T]":
    """``future``'s reply converted from its message to what the gateway promises."""
    out: Future[T] = Future()

    def done(fut: "Future[Any]") -> None:
        err = fut.exception()
        if err is not None:
            out.set_exception(err)
        else:
            out.set_result(convert(fut.result()))
    future.add_done_callback(done)
    return out


def register_job_master(channel: grpc.Channel, job_id: str, job_master_id: str, address: str,
                        timeout: float) -> str:
    """Register a JobMaster with the ResourceManager; returns the ResourceManagerId."""
    stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
    reply = stub.RegisterJobMaster(resourcemanager_pb2.RegisterJobMasterRequest(
        job_id=job_id, job_master_id=job_master_id, address=address), timeout=timeout)
    return reply.resource_manager_id


def job_master_stub(channel: grpc.Channel) -> jobmaster_pb2_grpc.JobMasterStub:
    return jobmaster_pb2_grpc.JobMasterStub(channel)


__all__ = ["GrpcTaskExecutorGateway", "GrpcResourceManagerGateway", "GrpcJobMasterGateway",
           "Refused",
           "register_job_master", "job_master_stub", "jobmaster_pb2", "to_future"]
