"""The gRPC JobMasterGateway (``yarnflow.appmaster.jobmaster.gateway``)."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import grpc

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobMasterId, ResourceID
from yarnflow.core.messages import (AskAgain, SlotOffer, SplitAnswer, TaskExecutionState,
                                    TaskExecutorLocation)
from yarnflow.rpc.codec import fill_location, fill_resource_spec, task_execution_state_to_proto
from yarnflow.rpc.gateways.calls import call_future, then
from yarnflow.rpc.generated import jobmaster_pb2, jobmaster_pb2_grpc


class GrpcJobMasterGateway:
    """A handle on one JobMaster, fenced with its JobMasterId: the ResourceManager's,
    or an executor's and its tasks'."""

    def __init__(self, channel: grpc.Channel, job_master_id: JobMasterId, timeout: float) -> None:
        self._stub = jobmaster_pb2_grpc.JobMasterStub(channel)
        self._jm_id = job_master_id
        self._timeout = timeout

    def disconnect_task_executor(self, resource_id: ResourceID, reason: str) -> "Future[None]":
        return then(call_future(self._stub.DisconnectTaskExecutor,
                                 jobmaster_pb2.TaskExecutorDisconnect(
                                     job_master_id=self._jm_id, resource_id=resource_id,
                                     reason=reason), self._timeout), lambda _: None)

    def notify_allocation_failure(self, allocation_id: AllocationID, cause: str) -> "Future[None]":
        return then(call_future(self._stub.NotifyAllocationFailure,
                                 jobmaster_pb2.AllocationFailure(
                                     job_master_id=self._jm_id, allocation_id=allocation_id,
                                     cause=cause), self._timeout), lambda _: None)

    def offer_slots(self, location: TaskExecutorLocation,
                    offers: list[SlotOffer]) -> "Future[list[str]]":
        message = jobmaster_pb2.OfferSlotsRequest(job_master_id=self._jm_id)
        fill_location(location, message.location)
        for offer in offers:
            fill_resource_spec(offer.profile, message.offers.add(
                allocation_id=offer.allocation_id, slot_index=offer.slot_index,
                worker_spec=offer.worker_spec).profile)
        return then(call_future(self._stub.OfferSlots, message, self._timeout),
                     lambda reply: list(reply.accepted))

    def heartbeat_from_task_executor(self, resource_id: ResourceID,
                                     attempts: list[TaskExecutionState]) -> "Future[None]":
        message = jobmaster_pb2.JobMasterHeartbeat(job_master_id=self._jm_id,
                                                   resource_id=resource_id)
        message.running_attempts.extend(task_execution_state_to_proto(JobMasterId(""), a) for a in attempts)
        return then(call_future(self._stub.HeartbeatFromTaskExecutor, message, self._timeout),
                    lambda _: None)

    def report_task_progress(self, resource_id: ResourceID,
                             attempts: list[TaskExecutionState]) -> "Future[None]":
        message = jobmaster_pb2.TaskProgress(job_master_id=self._jm_id, resource_id=resource_id)
        message.running_attempts.extend(task_execution_state_to_proto(JobMasterId(""), a) for a in attempts)
        return then(call_future(self._stub.ReportTaskProgress, message, self._timeout),
                    lambda _: None)

    def update_task_execution_state(self, update: TaskExecutionState) -> "Future[None]":
        return then(call_future(self._stub.UpdateTaskExecutionState,
                                 task_execution_state_to_proto(self._jm_id, update),
                                 self._timeout), lambda _: None)

    def notify_partition_data_available(self, attempt_id: ExecutionAttemptID, result_id: str) -> "Future[None]":
        return then(call_future(self._stub.NotifyPartitionDataAvailable,
                                 jobmaster_pb2.PartitionDataAvailable(
                                     job_master_id=self._jm_id, attempt_id=attempt_id,
                                     result_id=result_id), self._timeout), lambda _: None)

    def request_next_input_split(self, vertex_id: str, attempt_id: ExecutionAttemptID,
                                 request: int) -> "Future[SplitAnswer]":
        def answer(reply: Any) -> SplitAnswer:
            if reply.retry_after_s > 0:
                return AskAgain(reply.retry_after_s)
            return None if reply.end else bytes(reply.split)
        return then(call_future(self._stub.RequestNextInputSplit, jobmaster_pb2.InputSplitRequest(
            job_master_id=self._jm_id, vertex_id=vertex_id, attempt_id=attempt_id,
            request=request),
            self._timeout), answer)

    def acknowledge_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                               snapshot: bytes) -> "Future[None]":
        return then(call_future(self._stub.AcknowledgeCheckpoint, jobmaster_pb2.CheckpointAck(
            job_master_id=self._jm_id, attempt_id=attempt_id, checkpoint_id=checkpoint_id,
            snapshot=snapshot), self._timeout), lambda _: None)

    def decline_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                           reason: str) -> "Future[None]":
        return then(call_future(self._stub.DeclineCheckpoint, jobmaster_pb2.CheckpointDecline(
            job_master_id=self._jm_id, attempt_id=attempt_id, checkpoint_id=checkpoint_id,
            reason=reason), self._timeout), lambda _: None)
