"""The ResourceManager's gRPC service: the rpc edge. Each call is checked against the
fencing token, turned from protobuf into the model's dataclasses, and run on the
ResourceManager's main thread; a refusal ends the call with its status
(``yarnflow.rpc.errors``)."""
from __future__ import annotations

from typing import Any, Callable

import grpc

from yarnflow.appmaster.resourcemanager.resourcemanager import ResourceManager
from yarnflow.core.errors import FencingError, UnknownExecutor
from yarnflow.rpc.codec import (blocked_node_from_proto, overview_to_proto, registration_from_proto,
                                slot_report_from_proto, slot_request_from_proto)
from yarnflow.rpc.errors import errors_as_status
from yarnflow.rpc.generated import common_pb2, resourcemanager_pb2, resourcemanager_pb2_grpc


class ResourceManagerService(resourcemanager_pb2_grpc.ResourceManagerServicer):
    def __init__(self, rm: ResourceManager, timeout: float) -> None:
        self._rm = rm
        self._timeout = timeout

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._rm.main.call(fn, *args, timeout=self._timeout)

    def _fenced(self, token: str) -> None:
        self._rm.check_fencing(token)     # reads an immutable id: no main-thread hop

    @errors_as_status
    def RegisterTaskExecutor(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        registration = registration_from_proto(request)
        gateway = self._rm.task_executor_gateway(registration.location)   # off the main thread
        rm_id = self._call(self._rm.register_task_executor, registration, gateway)
        return resourcemanager_pb2.RegistrationResponse(accepted=True, resource_manager_id=rm_id)

    @errors_as_status
    def HeartbeatFromTaskExecutor(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        try:
            self._rm.receive_heartbeat(request.resource_id, request.resource_manager_id,
                                       slot_report_from_proto(request.slot_report),
                                       request.holds_partitions)
        except (UnknownExecutor, FencingError):
            return resourcemanager_pb2.HeartbeatResponse(known=False)   # register again
        return resourcemanager_pb2.HeartbeatResponse(known=True)

    @errors_as_status
    def NotifySlotAvailable(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._fenced(request.resource_manager_id)
        self._call(self._rm.notify_slot_available, request.resource_id, request.slot_index,
                   request.allocation_id)
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def DisconnectTaskExecutor(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._fenced(request.resource_manager_id)
        self._call(self._rm.close_task_executor, request.id,
                   f"TaskExecutor {request.id} disconnected: {request.reason}")
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def RegisterJobMaster(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        rm_id = self._call(self._rm.register_job_master, request.job_id, request.job_master_id,
                           request.address)
        return resourcemanager_pb2.RegisterJobMasterResponse(resource_manager_id=rm_id)

    @errors_as_status
    def DisconnectJobMaster(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._fenced(request.resource_manager_id)
        self._call(self._rm.disconnect_job_master, request.id, request.job_master_id)
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def RequestSlot(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._fenced(request.resource_manager_id)
        self._call(self._rm.request_slot, slot_request_from_proto(request))
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def CancelSlotRequest(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._fenced(request.resource_manager_id)
        self._call(self._rm.cancel_slot_request, request.allocation_id)
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def NotifyBlockedNodes(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._fenced(request.resource_manager_id)
        hosts = self._call(self._rm.block_nodes,
                           [blocked_node_from_proto(n) for n in request.nodes])
        return resourcemanager_pb2.BlockedHosts(hosts=hosts)

    @errors_as_status
    def GetClusterOverview(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return overview_to_proto(self._call(self._rm.overview))
