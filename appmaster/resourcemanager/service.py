"""The ResourceManager's gRPC service: each call hops onto its main thread."""
from __future__ import annotations

import grpc

from yarnflow.appmaster.resourcemanager.resource_manager import ResourceManager
from yarnflow.rpc.generated import common_pb2, resourcemanager_pb2, resourcemanager_pb2_grpc


class ResourceManagerService(resourcemanager_pb2_grpc.ResourceManagerServicer):
    def __init__(self, rm: ResourceManager, timeout: float) -> None:
        self._rm = rm
        self._timeout = timeout

    def _call(self, fn, *args):  # type: ignore[no-untyped-def]
        return self._rm.main.call(fn, *args, timeout=self._timeout)

    def _fenced(self, token: str, context: "grpc.ServicerContext") -> bool:
        return token == self._rm.resource_manager_id

    def RegisterTaskExecutor(self, request, context):  # noqa: N802 - gRPC names
        return self._call(self._rm.register_task_executor, request)

    def HeartbeatFromTaskExecutor(self, request, context):  # noqa: N802
        return self._call(self._rm.heartbeat_from_task_executor, request)

    def NotifySlotAvailable(self, request, context):  # noqa: N802
        if not self._fenced(request.resource_manager_id, context):
            return common_pb2.Ack(ok=False, message="stale ResourceManagerId")
        self._call(self._rm.notify_slot_available, request.resource_id, request.slot_index,
                   request.allocation_id)
        return common_pb2.Ack(ok=True)

    def DisconnectTaskExecutor(self, request, context):  # noqa: N802
        if not self._fenced(request.resource_manager_id, context):
            return common_pb2.Ack(ok=False, message="stale ResourceManagerId")
        self._call(self._rm.close_task_executor, request.id,
                   f"TaskExecutor {request.id} disconnected: {request.reason}")
        return common_pb2.Ack(ok=True)

    def RegisterJobMaster(self, request, context):  # noqa: N802
        rm_id = self._call(self._rm.register_job_master, request.job_id, request.job_master_id,
                           request.address)
        return resourcemanager_pb2.RegisterJobMasterResponse(resource_manager_id=rm_id)

    def DisconnectJobMaster(self, request, context):  # noqa: N802
        if not self._fenced(request.resource_manager_id, context):
            return common_pb2.Ack(ok=False, message="stale ResourceManagerId")
        self._call(self._rm.disconnect_job_master, request.id, request.job_master_id)
        return common_pb2.Ack(ok=True)

    def RequestSlot(self, request, context):  # noqa: N802
        if not self._fenced(request.resource_manager_id, context):
            return common_pb2.Ack(ok=False, message="stale ResourceManagerId: the JobMaster "
                                  "must register with the current ResourceManager")
        error = self._call(self._rm.request_slot, request)
        return common_pb2.Ack(ok=not error, message=error)

    def CancelSlotRequest(self, request, context):  # noqa: N802
        if not self._fenced(request.resource_manager_id, context):
            return common_pb2.Ack(ok=False, message="stale ResourceManagerId")
        self._call(self._rm.slot_manager.cancel_slot_request, request.allocation_id)
        return common_pb2.Ack(ok=True)

    def GetClusterOverview(self, request, context):  # noqa: N802
        return self._call(self._rm.overview)
