"""The Dispatcher's gRPC face, on the ApplicationMaster's one mutual-TLS server: a
JobGraph (user code inside it) is accepted only from a caller holding the session's
certificate."""
from __future__ import annotations

import logging
import threading
from typing import Callable

import grpc

from yarnflow.appmaster.dispatcher.dispatcher import Dispatcher, JobRejected
from yarnflow.rpc.generated import common_pb2, dispatcher_pb2, dispatcher_pb2_grpc

log = logging.getLogger(__name__)


class DispatcherService(dispatcher_pb2_grpc.DispatcherServicer):
    def __init__(self, dispatcher: Dispatcher, overview: Callable[[], dispatcher_pb2.SessionOverview],
                 shutdown: Callable[[str], None]) -> None:
        """``overview`` describes the session; ``shutdown(reason)`` ends it (called on a
        thread of its own, after the caller has its answer)."""
        self._dispatcher = dispatcher
        self._overview = overview
        self._shutdown = shutdown

    def SubmitJob(self, request, context):  # noqa: N802 - gRPC names
        try:
            job_id = self._dispatcher.submit(request)
        except JobRejected as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        except Exception as err:   # noqa: BLE001 - e.g. user code that does not unpickle
            log.exception("submitting job %s failed", request.job_id)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"the session could not start job {request.name}: {err}")
        return dispatcher_pb2.SubmitJobResponse(job_id=job_id)

    def ListJobs(self, request, context):  # noqa: N802
        return dispatcher_pb2.JobList(jobs=self._dispatcher.list_jobs())

    def GetJobDetails(self, request, context):  # noqa: N802
        try:
            return self._dispatcher.details(request.job_id)
        except KeyError as err:
            context.abort(grpc.StatusCode.NOT_FOUND, err.args[0])

    def CancelJob(self, request, context):  # noqa: N802
        try:
            self._dispatcher.cancel(request.job_id)
        except KeyError as err:
            return common_pb2.Ack(ok=False, message=err.args[0])
        return common_pb2.Ack(ok=True)

    def GetOverview(self, request, context):  # noqa: N802
        return self._overview()

    def Shutdown(self, request, context):  # noqa: N802
        threading.Thread(target=self._shutdown, args=(request.reason or "stopped by the user",),
                         name="session-shutdown", daemon=True).start()
        return common_pb2.Ack(ok=True)
