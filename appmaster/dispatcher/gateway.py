"""How a client reaches a session's Dispatcher (Flink's DispatcherGateway). The gRPC
implementation is ``yarnflow.rpc.gateways.dispatcher.GrpcDispatcherGateway``; a refusal fails the
future with the same ``yarnflow.core.errors`` kind the Dispatcher raised
(``JobRejected``, ``UnknownJob``, ``Refused``)."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

from yarnflow.core.ids import JobID
from yarnflow.core.details import JobDetails, SessionOverview
from yarnflow.core.jobgraph import JobGraph


class DispatcherGateway(Protocol):
    def submit_job(self, graph: JobGraph) -> "Future[JobID]":
        """The job id once the session accepted the job."""
        ...

    def list_jobs(self) -> "Future[list[JobDetails]]":
        """Running jobs first, then ended ones, oldest first."""
        ...

    def request_job_details(self, job_id: JobID) -> "Future[JobDetails]": ...
    def cancel_job(self, job_id: JobID) -> "Future[None]": ...
    def trigger_savepoint(self, job_id: JobID, directory: str, terminate: bool) -> "Future[str]":
        """Done with the savepoint's location once it completed."""
        ...

    def fetch_collected(self, job_id: JobID) -> "Future[tuple[bytes, ...]]":
        """An ended job's collected result, one Arrow IPC stream per subtask."""
        ...

    def request_overview(self) -> "Future[SessionOverview]": ...

    def shutdown(self, reason: str) -> "Future[None]":
        """Running jobs are cancelled and archived, then the application ends."""
        ...
