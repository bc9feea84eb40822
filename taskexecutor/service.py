"""The TaskExecutor's gRPC service, the rpc edge: each call is turned from protobuf
into the model's dataclasses and run on the executor's main thread; a refusal ends
the call with its status (``yarnflow.rpc.errors``)."""
from __future__ import annotations

from concurrent.futures import wait
import grpc
from typing import Any, Callable

from yarnflow.rpc.codec import resource_spec_from_proto, shared_parts_from_proto, tdd_from_proto
from yarnflow.core.fs.tokens import read_token_bytes
from yarnflow.core.messages import SlotAllocation
from yarnflow.core.streaming.events import CheckpointBarrier, CheckpointKind
from yarnflow.rpc.errors import errors_as_status
from yarnflow.rpc.generated import common_pb2, taskexecutor_pb2, taskexecutor_pb2_grpc
from yarnflow.taskexecutor.shared_parts import SharedParts
from yarnflow.taskexecutor.taskexecutor import TaskExecutor

_OK = common_pb2.Ack(ok=True)


class TaskExecutorService(taskexecutor_pb2_grpc.TaskExecutorServicer):
    def __init__(self, te: TaskExecutor, timeout: float, parts: SharedParts) -> None:
        self._te = te
        self._timeout = timeout
        self._parts = parts

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._te.main.call(fn, *args, timeout=self._timeout)

    @errors_as_status
    def RequestSlot(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802 - gRPC names
        allocation = SlotAllocation(request.slot_index, request.job_id, request.allocation_id,
                                    resource_spec_from_proto(request.profile),
                                    request.job_master_id, request.job_master_address)
        version = self._call(self._te.request_slot, allocation, request.resource_manager_id)
        return taskexecutor_pb2.SlotAllocationReply(ok=True, report_version=version)

    @errors_as_status
    def SubmitTask(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        # decoded here, off the main thread, with the shared parts it names
        self._parts.accept(shared_parts_from_proto(request))
        self._call(self._te.submit_task, tdd_from_proto(request, self._parts.get))
        return _OK

    @errors_as_status
    def CancelTask(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        known = self._call(self._te.cancel_task, request.job_master_id, request.attempt_id)
        return taskexecutor_pb2.CancelTaskResponse(known=known)

    @errors_as_status
    def FreeSlot(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        rm_heard = self._call(self._te.free_slot, request.allocation_id, request.cause,
                              request.job_master_id)
        if rm_heard is not None:
            # Off the main thread: answer once the ResourceManager knows the slot is free.
            wait([rm_heard], timeout=self._timeout)
        return _OK

    @errors_as_status
    def ReleaseJobPartitions(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._call(self._te.release_job_partitions, request.job_id, request.job_master_id)
        return _OK

    @errors_as_status
    def UpdateDelegationTokens(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._call(self._te.update_delegation_tokens, request.resource_manager_id,
                   read_token_bytes(request.credentials))
        return _OK

    @errors_as_status
    def Shutdown(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._call(self._te.shutdown_requested, request.resource_manager_id, request.reason)
        return _OK

    @errors_as_status
    def TriggerCheckpoint(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        barrier = CheckpointBarrier(request.checkpoint_id, request.timestamp_ms,
                                    CheckpointKind(request.kind), request.location)
        self._call(self._te.trigger_checkpoint, request.job_master_id, request.attempt_id,
                   barrier)
        return _OK

    @errors_as_status
    def NotifyCheckpoint(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._call(self._te.notify_checkpoint, request.job_master_id, request.attempt_id,
                   request.checkpoint_id, request.completed)
        return _OK
