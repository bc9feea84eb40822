"""gRPC-backed gateways: one component's handle on another, returning futures.

Calls never block the caller's main thread; an ``Ack`` with ``ok=false`` becomes a
``RemoteRefusal`` so a refusal and a transport failure both surface as exceptions.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import grpc

from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.generated import (common_pb2, jobmaster_pb2, jobmaster_pb2_grpc,
                                    resourcemanager_pb2, resourcemanager_pb2_grpc,
                                    taskexecutor_pb2, taskexecutor_pb2_grpc)
from yarnflow.rpc.codec import fill_resource_spec


class RemoteRefusal(Exception):
    """The peer understood the call and said no (fencing, unknown id, bad state)."""


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
            out.set_exception(err)
            return
        if isinstance(result, (common_pb2.Ack, taskexecutor_pb2.SlotAllocationReply)) \
                and not result.ok:
            out.set_exception(RemoteRefusal(result.message))
        else:
            out.set_result(result)
    call.add_done_callback(done)
    return out


class GrpcTaskExecutorGateway:
    """A JobMaster's handle on one TaskExecutor, fenced with the JobMasterId."""

    def __init__(self, channel: grpc.Channel, job_master_id: str, timeout: float) -> None:
        self._stub = taskexecutor_pb2_grpc.TaskExecutorStub(channel)
        self._jm_id = job_master_id
        self._timeout = timeout

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


def register_job_master(channel: grpc.Channel, job_id: str, job_master_id: str, address: str,
                        timeout: float) -> str:
    """Register a JobMaster with the ResourceManager; returns the ResourceManagerId."""
    stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
    reply = stub.RegisterJobMaster(resourcemanager_pb2.RegisterJobMasterRequest(
        job_id=job_id, job_master_id=job_master_id, address=address), timeout=timeout)
    return reply.resource_manager_id


def job_master_stub(channel: grpc.Channel) -> jobmaster_pb2_grpc.JobMasterStub:
    return jobmaster_pb2_grpc.JobMasterStub(channel)


__all__ = ["GrpcTaskExecutorGateway", "GrpcResourceManagerGateway", "RemoteRefusal",
           "register_job_master", "job_master_stub", "jobmaster_pb2", "to_future"]
