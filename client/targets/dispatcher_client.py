"""The client's way into an application's Dispatcher (a session's, or the one a
per-job application runs for its job), over the application's mutual TLS.

The certificate is in the client's application store (only the account that
submitted the application has it); the Dispatcher's address is cached there once
known and otherwise read from Skein's key-value store. Every failure becomes a
``YarnError`` that says what happened and what to do.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Callable, TypeVar

import grpc

from yarnflow.core.ids import JobID
from yarnflow.core.details import JobDetails, SessionOverview
from yarnflow.core.errors import JobRejected, Refused, UnknownJob
from yarnflow.core.jobgraph import JobGraph
from yarnflow.rpc.channels import ChannelCache
from yarnflow.rpc.gateways.dispatcher import GrpcDispatcherGateway
from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.client.targets.yarn_errors import YarnError
from yarnflow.client.targets.yarn_report import YarnApplicationReport

T = TypeVar("T")

# What a call sees of a Dispatcher that is going away: nothing answers, no answer in
# time, or a call in flight cancelled by the server stopping (an attached client's
# poll as a per-job ApplicationMaster ends).
_GONE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
         grpc.StatusCode.CANCELLED)


class JobNotFound(YarnError):
    """The application never ran this job."""


class ApplicationEnded(YarnError):
    """The application is over: its Dispatcher is gone."""


class NotServingYet(YarnError):
    """The application is starting: its Dispatcher has not published an address."""


class DispatcherClient:
    def __init__(self, app_id: str, timeout: float, store: ApplicationStore | None = None) -> None:
        self.app_id = app_id
        self.timeout = timeout
        self.store = store or ApplicationStore()
        self._channels = ChannelCache(self.store.credentials(app_id))
        self._address = self.store.info(app_id).get("dispatcher", "")

    def close(self) -> None:
        self._channels.close()

    def __enter__(self) -> "DispatcherClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _lookup_address(self) -> str:
        with YarnApplicationReport(self.app_id, self.timeout, self.store) as app:
            state = app.status(with_details=False)
            address = app.appmaster_address() if state.state == "RUNNING" else None
        if address is None:
            kind = ApplicationEnded if state.finished else NotServingYet
            raise kind(f"application {self.app_id} is {state.state}, not serving jobs"
                       + (f": {state.diagnostics.strip()[:500]}" if state.diagnostics else "")
                       + ("" if state.finished else "; try again once it runs"))
        self.store.update(self.app_id, dispatcher=address)
        return address

    def _call(self, what: str, call: "Callable[[GrpcDispatcherGateway], Future[T]]",
              timeout: float | None = None) -> T:
        if not self._address:
            self._address = self._lookup_address()
        wait = timeout or self.timeout
        gateway = GrpcDispatcherGateway(self._channels.get(self._address), wait)
        try:
            return call(gateway).result(wait + 1)
        except UnknownJob as err:
            raise JobNotFound(str(err)) from None
        except JobRejected as err:
            raise YarnError(f"application {self.app_id} refused the job: {err}") from None
        except Refused as err:
            raise YarnError(str(err)) from None
        except grpc.RpcError as err:
            if err.code() in _GONE:
                # A cached address of an application that ended, or moved: ask YARN, which
                # raises naming the application's state when it is over.
                # A new ApplicationMaster attempt publishes a new address.
                stale, self._address = self._address, ""
                self._address = self._lookup_address()
                if self._address != stale:
                    return self._call(what, call, timeout)
                raise NotServingYet(f"application {self.app_id}'s Dispatcher at {stale} did not "
                                    f"answer ({what}) within {wait:g} s (yarn.client.timeout)") from None
            raise YarnError(f"application {self.app_id}: {what} failed: {err.details()}") from None

    def submit(self, graph: JobGraph) -> JobID:
        return self._call("submitting the job", lambda g: g.submit_job(graph))

    def list_jobs(self) -> list[JobDetails]:
        return self._call("listing jobs", lambda g: g.list_jobs())

    def details(self, job_id: JobID) -> JobDetails:
        return self._call(f"details of job {job_id}", lambda g: g.request_job_details(job_id))

    def cancel(self, job_id: JobID) -> None:
        self._call(f"cancelling job {job_id}", lambda g: g.cancel_job(job_id))

    def savepoint(self, job_id: JobID, directory: str, terminate: bool, timeout: float) -> str:
        """The completed savepoint's location (waits up to ``timeout``)."""
        what = "stopping with a savepoint" if terminate else "a savepoint"
        return self._call(f"{what} of job {job_id}",
                          lambda g: g.trigger_savepoint(job_id, directory, terminate), timeout)

    def fetch_collected(self, job_id: JobID) -> tuple[bytes, ...]:
        return self._call(f"the result of job {job_id}", lambda g: g.fetch_collected(job_id))

    def overview(self, timeout: float | None = None) -> SessionOverview:
        return self._call("the overview", lambda g: g.request_overview(), timeout)

    def shutdown(self, reason: str) -> None:
        self._call("stopping", lambda g: g.shutdown(reason))
