"""The gRPC TaskExecutorGateway (``yarnflow.taskexecutor.gateway``)."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import grpc

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobID, JobMasterId, ResourceManagerId
from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.fs.tokens import HadoopToken, token_bytes
from yarnflow.core.messages import SlotAllocation
from yarnflow.rpc.codec import fill_resource_spec, tdd_to_bytes
from yarnflow.rpc.gateways.calls import call_future, then
from yarnflow.core.streaming.events import CheckpointBarrier
from yarnflow.rpc.generated import common_pb2, taskexecutor_pb2, taskexecutor_pb2_grpc


class GrpcTaskExecutorGateway:
    """A handle on one TaskExecutor, fenced with its caller's token: a JobMaster's
    JobMasterId, or the ResourceManager's ResourceManagerId."""

    def __init__(self, channel: grpc.Channel, job_master_id: JobMasterId, timeout: float,
                 resource_manager_id: ResourceManagerId = ResourceManagerId("")) -> None:
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
        return then(call_future(self._stub.RequestSlot, message, self._timeout),
                     lambda reply: int(reply.report_version))

    def shutdown(self, reason: str) -> "Future[None]":
        return then(call_future(self._stub.Shutdown, taskexecutor_pb2.ShutdownMessage(
            resource_manager_id=self._rm_id, reason=reason), self._timeout), lambda _: None)

    def update_delegation_tokens(self, tokens: list[HadoopToken]) -> "Future[None]":
        return then(call_future(self._stub.UpdateDelegationTokens,
                                taskexecutor_pb2.DelegationTokensMessage(
                                    resource_manager_id=self._rm_id,
                                    credentials=token_bytes(tokens)), self._timeout),
                    lambda _: None)

    def submit_task(self, descriptor: TaskDeploymentDescriptor) -> "Future[Any]":
        return call_future(self._submit_task, tdd_to_bytes(descriptor), self._timeout)

    def cancel_task(self, attempt_id: ExecutionAttemptID) -> "Future[bool]":
        return then(call_future(self._stub.CancelTask, taskexecutor_pb2.CancelTaskMessage(
            job_master_id=self._jm_id, attempt_id=attempt_id), self._timeout),
            lambda reply: bool(reply.known))

    def free_slot(self, allocation_id: AllocationID, cause: str) -> "Future[Any]":
        return call_future(self._stub.FreeSlot, taskexecutor_pb2.FreeSlotMessage(
            job_master_id=self._jm_id, allocation_id=allocation_id, cause=cause), self._timeout)

    def release_job_partitions(self, job_id: JobID) -> "Future[Any]":
        return call_future(self._stub.ReleaseJobPartitions, taskexecutor_pb2.ReleasePartitionsMessage(
            job_master_id=self._jm_id, job_id=job_id), self._timeout)

    def trigger_checkpoint(self, attempt_id: ExecutionAttemptID,
                           barrier: CheckpointBarrier) -> "Future[Any]":
        return call_future(self._stub.TriggerCheckpoint, taskexecutor_pb2.CheckpointTrigger(
            job_master_id=self._jm_id, attempt_id=attempt_id,
            checkpoint_id=barrier.checkpoint_id, timestamp_ms=barrier.timestamp_ms,
            kind=barrier.kind.value, location=barrier.location), self._timeout)

    def notify_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                          completed: bool) -> "Future[Any]":
        return call_future(self._stub.NotifyCheckpoint, taskexecutor_pb2.CheckpointNotification(
            job_master_id=self._jm_id, attempt_id=attempt_id, checkpoint_id=checkpoint_id,
            completed=completed), self._timeout)
