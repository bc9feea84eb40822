"""The Dispatcher's gRPC face, on the ApplicationMaster's one mutual-TLS server: a
JobGraph (user code inside it) is accepted only from a caller holding the session's
certificate."""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

import grpc

from yarnflow.appmaster.dispatcher.dispatcher import Dispatcher
from yarnflow.core.errors import JobRejected
from yarnflow.rpc.codec import job_details_to_proto, jobgraph_from_proto, session_overview_to_proto
from yarnflow.rpc.errors import errors_as_status
from yarnflow.rpc.generated import common_pb2, dispatcher_pb2, dispatcher_pb2_grpc

log = logging.getLogger(__name__)


class DispatcherService(dispatcher_pb2_grpc.DispatcherServicer):
    def __init__(self, dispatcher: Dispatcher, shutdown: Callable[[str], None]) -> None:
        """``shutdown(reason)`` ends the application (called on a thread of its own,
        after the caller has its answer)."""
        self._dispatcher = dispatcher
        self._shutdown = shutdown

    @errors_as_status
    def SubmitJob(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802 - gRPC names
        try:
            graph = jobgraph_from_proto(request, load_operators=False)
        except Exception as err:   # e.g. a committer that does not unpickle
            log.exception("reading job %s failed", request.job_id)
            raise JobRejected(f"the session could not read job {request.name}: {err}") from None
        return dispatcher_pb2.SubmitJobResponse(
            job_id=self._dispatcher.submit(graph, request.SerializeToString()))

    @errors_as_status
    def ListJobs(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return dispatcher_pb2.JobList(
            jobs=[job_details_to_proto(d) for d in self._dispatcher.list_jobs()])

    @errors_as_status
    def GetJobDetails(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return job_details_to_proto(self._dispatcher.details(request.job_id))

    @errors_as_status
    def CancelJob(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._dispatcher.cancel(request.job_id)
        return common_pb2.Ack(ok=True)

    @errors_as_status
    def TriggerSavepoint(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        location = self._dispatcher.savepoint(request.job_id, request.directory,
                                              request.terminate)
        return dispatcher_pb2.SavepointResponse(location=location)

    @errors_as_status
    def FetchCollected(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return dispatcher_pb2.CollectedResult(
            parts=list(self._dispatcher.fetch_collected(request.job_id)))

    @errors_as_status
    def GetOverview(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return session_overview_to_proto(self._dispatcher.overview())

    @errors_as_status
    def Shutdown(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        threading.Thread(target=self._shutdown, args=(request.reason or "stopped by the user",),
                         name="session-shutdown", daemon=True).start()
        return common_pb2.Ack(ok=True)


def add_dispatcher_service(server: grpc.Server, dispatcher: Dispatcher,
                           shutdown: Callable[[str], None]) -> None:
    dispatcher_pb2_grpc.add_DispatcherServicer_to_server(DispatcherService(dispatcher, shutdown),
                                                         server)
