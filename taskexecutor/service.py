"""The TaskExecutor's gRPC service: each call hops onto its main thread."""
from __future__ import annotations

from concurrent.futures import wait
from typing import TYPE_CHECKING

from yarnflow.rpc.generated import common_pb2, taskexecutor_pb2, taskexecutor_pb2_grpc

if TYPE_CHECKING:
    from yarnflow.taskexecutor.taskexecutor import TaskExecutor


def _ack(error: str) -> common_pb2.Ack:
    return common_pb2.Ack(ok=not error, message=error)


class TaskExecutorService(taskexecutor_pb2_grpc.TaskExecutorServicer):
    def __init__(self, te: "TaskExecutor", timeout: float) -> None:
        self._te = te
        self._timeout = timeout

    def _call(self, fn, *args):  # type: ignore[no-untyped-def]
        return self._te.main.call(fn, *args, timeout=self._timeout)

    def RequestSlot(self, request, context):  # noqa: N802 - gRPC names
        error, version = self._call(self._te.request_slot, request)
        return taskexecutor_pb2.SlotAllocationReply(ok=not error, message=error,
                                                    report_version=version)

    def SubmitTask(self, request, context):  # noqa: N802
        return _ack(self._call(self._te.submit_task, request))

    def CancelTask(self, request, context):  # noqa: N802
        return _ack(self._call(self._te.cancel_task, request.job_master_id, request.attempt_id))

    def FreeSlot(self, request, context):  # noqa: N802
        error, rm_heard = self._call(self._te.free_slot, request.allocation_id, request.cause,
                                     request.job_master_id)
        if rm_heard is not None:
            # Off the main thread: answer once the ResourceManager knows the slot is free.
            wait([rm_heard], timeout=self._timeout)
        return _ack(error)

    def ReleaseJobPartitions(self, request, context):  # noqa: N802
        self._call(self._te.release_job_partitions, request.job_id)
        return _ack("")

    def Shutdown(self, request, context):  # noqa: N802
        return _ack(self._call(self._te.shutdown_requested, request.resource_manager_id,
                               request.reason))
