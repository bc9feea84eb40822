"""The JobMaster gRPC service; one server hosts every JobMaster of the ApplicationMaster
and routes each call by its JobMasterId (the fencing token) or job id. A call for a
JobMaster that is not (or no longer) here is refused with ``FencingError``."""
from __future__ import annotations

import threading
import grpc
from typing import Any, Callable


from yarnflow.appmaster.jobmaster.jobmaster import JobMaster
from yarnflow.core.errors import FencingError, Refused
from yarnflow.core.messages import AskAgain
from yarnflow.rpc.codec import (location_from_proto, slot_offer_from_proto,
                                task_execution_state_from_proto)
from yarnflow.rpc.errors import errors_as_status
from yarnflow.rpc.generated import common_pb2, jobmaster_pb2, jobmaster_pb2_grpc

_STALE = "unknown or stale JobMasterId: this JobMaster is not (or no longer) the job's leader"


class JobMasterService(jobmaster_pb2_grpc.JobMasterServicer):
    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._by_fencing_token: dict[str, JobMaster] = {}
        self._lock = threading.Lock()

    def register(self, jm: JobMaster) -> None:
        with self._lock:
            self._by_fencing_token[jm.job_master_id] = jm

    def unregister(self, jm: JobMaster) -> None:
        """The job ended: its JobMaster leaves (its details live on in the Dispatcher)."""
        with self._lock:
            self._by_fencing_token.pop(jm.job_master_id, None)

    def _jm(self, token: str) -> JobMaster:
        with self._lock:
            jm = self._by_fencing_token.get(token)
        if jm is None:
            raise FencingError(_STALE)
        return jm

    def _on_main(self, jm: JobMaster, fn: Callable[..., Any], *args: Any) -> Any:
        return jm.main.call(fn, *args, timeout=self._timeout)

    @errors_as_status
    def OfferSlots(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802 - gRPC names
        jm = self._jm(request.job_master_id)
        accepted = self._on_main(jm, jm.offer_slots, location_from_proto(request.location),
                                 [slot_offer_from_proto(o) for o in request.offers])
        return jobmaster_pb2.OfferSlotsResponse(accepted=accepted)

    @errors_as_status
    def UpdateTaskExecutionState(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        if not self._on_main(jm, jm.update_task_execution_state,
                             task_execution_state_from_proto(request)):
            raise Refused(f"attempt {request.attempt_id} is not a current attempt of job {jm.job_id}")
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def RequestNextInputSplit(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        answer = self._on_main(jm, jm.request_next_input_split, request.vertex_id,
                               request.attempt_id, request.request)
        if isinstance(answer, AskAgain):
            return jobmaster_pb2.InputSplitResponse(retry_after_s=answer.seconds)
        return jobmaster_pb2.InputSplitResponse(end=answer is None, split=answer or b"")

    @errors_as_status
    def NotifyPartitionDataAvailable(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        jm.main.execute(jm.notify_partition_data_available, request.attempt_id, request.result_id)
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def HeartbeatFromTaskExecutor(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        jm.main.execute(jm.heartbeat_from_task_executor, request.resource_id,
                        [task_execution_state_from_proto(a) for a in request.running_attempts])
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def ReportTaskProgress(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        jm.main.execute(jm.report_task_progress, request.resource_id,
                        [task_execution_state_from_proto(a) for a in request.running_attempts])
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def DisconnectTaskExecutor(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        jm.main.execute(jm.disconnect_task_executor, request.resource_id, request.reason)
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def NotifyAllocationFailure(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        jm.main.execute(jm.notify_allocation_failure, request.allocation_id, request.cause)
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def AcknowledgeCheckpoint(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        jm.main.execute(jm.acknowledge_checkpoint, request.attempt_id, request.checkpoint_id,
                        bytes(request.snapshot))
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def DeclineCheckpoint(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        jm = self._jm(request.job_master_id)
        jm.main.execute(jm.decline_checkpoint, request.attempt_id, request.checkpoint_id,
                        request.reason)
        return common_pb2.Ack(ok=True)
