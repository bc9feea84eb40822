"""The JobMaster gRPC service; one server hosts every JobMaster of the ApplicationMaster
and routes each call by its JobMasterId (the fencing token) or job id."""
from __future__ import annotations

import threading

import grpc

from yarnflow.appmaster.jobmaster.jobmaster import JobMaster
from yarnflow.appmaster.jobmaster.slotpool.slot_pool import SlotOffer
from yarnflow.appmaster.jobmaster.splits import AskAgain
from yarnflow.rpc.generated import common_pb2, jobmaster_pb2, jobmaster_pb2_grpc
from yarnflow.rpc.codec import location_from_proto, resource_spec_from_proto

_STALE = "unknown or stale JobMasterId: this JobMaster is not (or no longer) the job's leader"


class JobMasterService(jobmaster_pb2_grpc.JobMasterServicer):
    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._by_fencing_token: dict[str, JobMaster] = {}
        self._by_job: dict[str, JobMaster] = {}
        self._lock = threading.Lock()

    def register(self, jm: JobMaster) -> None:
        with self._lock:
            self._by_fencing_token[jm.job_master_id] = jm
            self._by_job[jm.job_id] = jm

    def unregister(self, jm: JobMaster) -> None:
        with self._lock:
            self._by_fencing_token.pop(jm.job_master_id, None)

    def _jm(self, token: str) -> JobMaster | None:
        with self._lock:
            return self._by_fencing_token.get(token)

    def _job(self, job_id: str, context: grpc.ServicerContext) -> JobMaster:
        with self._lock:
            jm = self._by_job.get(job_id)
        if jm is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no job {job_id} here")
        return jm  # type: ignore[return-value]

    def OfferSlots(self, request, context):  # noqa: N802 - gRPC names
        jm = self._jm(request.job_master_id)
        if jm is None:
            return jobmaster_pb2.OfferSlotsResponse()
        offers = [SlotOffer(o.allocation_id, o.slot_index, resource_spec_from_proto(o.profile))
                  for o in request.offers]
        accepted = jm.main.call(jm.offer_slots, location_from_proto(request.location),
                                offers, timeout=self._timeout)
        return jobmaster_pb2.OfferSlotsResponse(accepted=accepted)

    def UpdateTaskExecutionState(self, request, context):  # noqa: N802
        jm = self._jm(request.job_master_id)
        if jm is None:
            return common_pb2.Ack(ok=False, message=_STALE)
        known = jm.main.call(jm.update_task_execution_state, request, timeout=self._timeout)
        return common_pb2.Ack(ok=known, message="" if known else "unknown attempt")

    def RequestNextInputSplit(self, request, context):  # noqa: N802
        jm = self._jm(request.job_master_id)
        if jm is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, _STALE)
        try:
            answer = jm.main.call(jm.request_next_input_split, request.vertex_id,
                                  request.attempt_id, timeout=self._timeout)
        except RuntimeError as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        if isinstance(answer, AskAgain):
            return jobmaster_pb2.InputSplitResponse(retry_after_s=answer.seconds)
        return jobmaster_pb2.InputSplitResponse(end=answer is None, split=answer or b"")

    def NotifyPartitionDataAvailable(self, request, context):  # noqa: N802
        jm = self._jm(request.job_master_id)
        if jm is None:
            return common_pb2.Ack(ok=False, message=_STALE)
        jm.main.execute(jm.notify_partition_data_available, request.attempt_id, request.result_id)
        return common_pb2.Ack(ok=True)

    def HeartbeatFromTaskExecutor(self, request, context):  # noqa: N802
        jm = self._jm(request.job_master_id)
        if jm is None:
            return common_pb2.Ack(ok=False, message=_STALE)
        jm.main.execute(jm.heartbeat_from_task_executor, request.resource_id)
        return common_pb2.Ack(ok=True)

    def DisconnectTaskExecutor(self, request, context):  # noqa: N802
        jm = self._jm(request.job_master_id)
        if jm is None:
            return common_pb2.Ack(ok=False, message=_STALE)
        jm.main.execute(jm.disconnect_task_executor, request.resource_id, request.reason)
        return common_pb2.Ack(ok=True)

    def NotifyAllocationFailure(self, request, context):  # noqa: N802
        jm = self._jm(request.job_master_id)
        if jm is None:
            return common_pb2.Ack(ok=False, message=_STALE)
        jm.main.execute(jm.notify_allocation_failure, request.allocation_id, request.cause)
        return common_pb2.Ack(ok=True)

    def GetJobDetails(self, request, context):  # noqa: N802
        jm = self._job(request.job_id, context)
        return jm.details()

    def CancelJob(self, request, context):  # noqa: N802
        jm = self._job(request.job_id, context)
        jm.cancel()
        return common_pb2.Ack(ok=True)
