"""The gRPC DispatcherGateway (``yarnflow.appmaster.dispatcher.gateway``): what the
client loads to reach an ApplicationMaster, and no other peer's stubs."""
from __future__ import annotations

from concurrent.futures import Future

import grpc

from yarnflow.core.ids import JobID
from yarnflow.core.details import JobDetails, SessionOverview
from yarnflow.core.jobgraph import JobGraph
from yarnflow.rpc.codec import job_details_from_proto, jobgraph_to_proto, session_overview_from_proto
from yarnflow.rpc.gateways.calls import call_future, then
from yarnflow.rpc.generated import common_pb2, dispatcher_pb2, dispatcher_pb2_grpc, jobmaster_pb2


class GrpcDispatcherGateway:
    """A client's handle on an ApplicationMaster's Dispatcher (a session's, or the
    per-job one that serves its single job)."""

    def __init__(self, channel: grpc.Channel, timeout: float) -> None:
        self._stub = dispatcher_pb2_grpc.DispatcherStub(channel)
        self._timeout = timeout

    def submit_job(self, graph: JobGraph) -> "Future[JobID]":
        return then(call_future(self._stub.SubmitJob, jobgraph_to_proto(graph), self._timeout),
                     lambda reply: JobID(reply.job_id))

    def list_jobs(self) -> "Future[list[JobDetails]]":
        return then(call_future(self._stub.ListJobs, common_pb2.Empty(), self._timeout),
                     lambda reply: [job_details_from_proto(d) for d in reply.jobs])

    def request_job_details(self, job_id: JobID) -> "Future[JobDetails]":
        return then(call_future(self._stub.GetJobDetails, jobmaster_pb2.JobId(job_id=job_id),
                                 self._timeout), job_details_from_proto)

    def cancel_job(self, job_id: JobID) -> "Future[None]":
        return then(call_future(self._stub.CancelJob, jobmaster_pb2.JobId(job_id=job_id),
                                 self._timeout), lambda _: None)

    def trigger_savepoint(self, job_id: JobID, directory: str, terminate: bool) -> "Future[str]":
        return then(call_future(self._stub.TriggerSavepoint, dispatcher_pb2.SavepointRequest(
            job_id=job_id, directory=directory, terminate=terminate), self._timeout),
            lambda reply: str(reply.location))

    def fetch_collected(self, job_id: JobID) -> "Future[tuple[bytes, ...]]":
        return then(call_future(self._stub.FetchCollected, jobmaster_pb2.JobId(job_id=job_id),
                                self._timeout), lambda reply: tuple(reply.parts))

    def request_overview(self) -> "Future[SessionOverview]":
        return then(call_future(self._stub.GetOverview, common_pb2.Empty(), self._timeout),
                     session_overview_from_proto)

    def shutdown(self, reason: str) -> "Future[None]":
        return then(call_future(self._stub.Shutdown,
                                 dispatcher_pb2.ShutdownRequest(reason=reason), self._timeout),
                     lambda _: None)
