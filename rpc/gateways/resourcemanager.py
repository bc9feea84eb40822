"""The gRPC ResourceManager gateways (``yarnflow.appmaster.resourcemanager.gateway``):
a JobMaster's (to register, then registered), and a TaskExecutor's."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import grpc

from yarnflow.core.ids import AllocationID, JobID, JobMasterId, ResourceID, ResourceManagerId
from yarnflow.core.errors import Refused
from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.messages import SlotReport, TaskExecutorRegistration
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.codec import (fill_blocked_node, fill_resource_spec, fill_slot_report,
                                registration_to_proto)
from yarnflow.rpc.gateways.calls import call_future, then
from yarnflow.rpc.generated import resourcemanager_pb2, resourcemanager_pb2_grpc


class GrpcResourceManagerGateway:
    """A JobMaster's handle on the ResourceManager, fenced both ways."""

    def __init__(self, channel: grpc.Channel, resource_manager_id: ResourceManagerId, job_id: JobID,
                 job_master_id: JobMasterId, job_master_address: str, timeout: float) -> None:
        self._stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
        self._rm_id = resource_manager_id
        self._job_id = job_id
        self._jm_id = job_master_id
        self._jm_address = job_master_address
        self._timeout = timeout

    def request_slot(self, allocation_id: AllocationID, profile: ResourceSpec,
                     preferred_hosts: tuple[str, ...] = (), exact: bool = False,
                     wanted: int = 0) -> "Future[Any]":
        request = resourcemanager_pb2.SlotRequest(
            resource_manager_id=self._rm_id, job_id=self._job_id, job_master_id=self._jm_id,
            allocation_id=allocation_id, job_master_address=self._jm_address,
            preferred_hosts=preferred_hosts, exact=exact, wanted=wanted)
        fill_resource_spec(profile, request.profile)
        return call_future(self._stub.RequestSlot, request, self._timeout)

    def cancel_slot_request(self, allocation_id: AllocationID) -> "Future[Any]":
        return call_future(self._stub.CancelSlotRequest, resourcemanager_pb2.CancelSlotRequestMessage(
            resource_manager_id=self._rm_id, job_master_id=self._jm_id,
            allocation_id=allocation_id), self._timeout)

    def notify_blocked_nodes(self, nodes: list[BlockedNode]) -> "Future[list[str]]":
        message = resourcemanager_pb2.BlockedNodes(resource_manager_id=self._rm_id,
                                                   job_master_id=self._jm_id)
        for node in nodes:
            fill_blocked_node(node, message.nodes.add())
        return then(call_future(self._stub.NotifyBlockedNodes, message, self._timeout),
                    lambda reply: list(reply.hosts))

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
        return then(call_future(self._stub.RegisterTaskExecutor,
                                 registration_to_proto(registration), self._timeout), accepted)

    def heartbeat_from_task_executor(self, resource_manager_id: ResourceManagerId, resource_id: ResourceID,
                                     report: SlotReport, holds_partitions: bool) -> "Future[bool]":
        message = resourcemanager_pb2.TaskExecutorHeartbeat(
            resource_manager_id=resource_manager_id, resource_id=resource_id,
            holds_partitions=holds_partitions)
        fill_slot_report(report, message.slot_report)
        return then(call_future(self._stub.HeartbeatFromTaskExecutor, message, self._timeout),
                     lambda reply: bool(reply.known))

    def notify_slot_available(self, resource_manager_id: ResourceManagerId, resource_id: ResourceID,
                              slot_index: int, allocation_id: AllocationID) -> "Future[None]":
        return then(call_future(self._stub.NotifySlotAvailable, resourcemanager_pb2.SlotAvailable(
            resource_manager_id=resource_manager_id, resource_id=resource_id,
            slot_index=slot_index, allocation_id=allocation_id), self._timeout), lambda _: None)


class GrpcResourceManagerRegistrationGateway:
    """A JobMaster's way to register with the ResourceManager."""

    def __init__(self, channel: grpc.Channel, timeout: float) -> None:
        self._stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
        self._timeout = timeout

    def register_job_master(self, job_id: JobID, job_master_id: JobMasterId,
                            address: str) -> "Future[ResourceManagerId]":
        return then(call_future(self._stub.RegisterJobMaster, resourcemanager_pb2.RegisterJobMasterRequest(
            job_id=job_id, job_master_id=job_master_id, address=address), self._timeout),
            lambda reply: ResourceManagerId(reply.resource_manager_id))
