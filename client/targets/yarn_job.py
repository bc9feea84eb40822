"""A job on YARN, from the client: per-job and session jobs alike are answered for by
their application's Dispatcher while it runs. Once a per-job application is over,
the job's archived details (in the job history) say how it ended, and failing those,
YARN's final status and diagnostics."""
from __future__ import annotations

from yarnflow.core.ids import JobID
from yarnflow.core.details import JobDetails, JobResult
from yarnflow.core.status import JobStatus
from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.client.targets.base import JobHandle
from yarnflow.client.targets.dispatcher_client import (ApplicationEnded, DispatcherClient, JobNotFound,
                                                NotServingYet)
from yarnflow.client.targets.yarn_errors import YarnError

# YARN's final status of a per-job application -> the status of its job
_FINAL = {"SUCCEEDED": JobStatus.FINISHED, "KILLED": JobStatus.CANCELED}


class YarnJobHandle(JobHandle):
    def __init__(self, app_id: str, job_id: JobID, timeout: float, tracking_url: str = "",
                 owns_application: bool = False, history_dir: str = "",
                 store: ApplicationStore | None = None) -> None:
        """``owns_application``: a per-job application, which ends with its job (and
        which cancel may have YARN kill when its Dispatcher does not answer)."""
        self.application_id = app_id
        self.job_id = job_id
        self.tracking_url = tracking_url
        self._timeout = timeout
        self._owns = owns_application
        self._history = history_dir
        self._store = store or ApplicationStore()
        self._dispatcher: DispatcherClient | None = None
        self._last: JobDetails | None = None
        self._ended: JobResult | None = None
        self._fetched = False

    def _client(self) -> DispatcherClient:
        if self._dispatcher is None:
            self._dispatcher = DispatcherClient(self.application_id, self._timeout, self._store)
        return self._dispatcher

    def close(self) -> None:
        if self._dispatcher is not None:
            self._dispatcher.close()
            self._dispatcher = None

    def details(self) -> JobDetails | None:
        if self._ended is not None:
            return self._ended.details
        try:
            self._last = self._client().details(self.job_id)
        except JobNotFound:
            if not self._owns:
                raise          # a session that never ran it
            return None        # the per-job Dispatcher is up, the job not yet submitted
        except NotServingYet:
            return None        # the ApplicationMaster is starting
        except ApplicationEnded:
            if not self._owns:
                raise
            self._ended = self._outcome_after_the_application()
            return self._ended.details
        if self._last.status.is_globally_terminal:
            self._ended = JobResult.of(self._last)
            if self.collecting and self._last.status is JobStatus.FINISHED:
                # now, while the application waits for it (pipeline.collect.result-timeout)
                self._ended.collected = self._client().fetch_collected(self.job_id)
                self._fetched = True
        return self._last

    def result(self) -> JobResult | None:
        if self._ended is None:
            self.details()
        return self._ended

    def wait(self, timeout: float | None = None, poll: float = 0.5) -> JobResult:
        """For a per-job application, also until the application itself ended (within the
        client's timeout): its ApplicationMaster archives the job and gives back its
        containers after the job ended, and whoever ran an attached job expects
        ``yarnflow history`` to show it and YARN to list nothing of it once we return."""
        result = super().wait(timeout, poll)
        if self._owns:
            from yarnflow.client.targets.yarn_apps import YarnApplication
            try:
                with YarnApplication(self.application_id, self._timeout, self._store) as app:
                    app.wait_finished(self._timeout, poll)
            except YarnError:
                pass   # the job's outcome is known; the application ends on its own
        return result

    def _outcome_after_the_application(self) -> JobResult:
        from yarnflow.client.targets.history import archived_job   # not on the submit path
        archived = archived_job(self._history, self.job_id)
        if archived is not None and archived.status.is_globally_terminal:
            return JobResult.of(archived)
        from yarnflow.client.targets.yarn_apps import YarnApplication
        with YarnApplication(self.application_id, self._timeout, self._store) as app:
            final = app.status(with_details=False)
        status = _FINAL.get(final.final_status, JobStatus.FAILED)
        failure = "" if status is JobStatus.FINISHED else final.diagnostics.strip()
        details = self._last or JobDetails(self.job_id, "", status)
        details.status = status
        if failure and not details.failure:    # e.g. the ApplicationMaster never started
            details.failure = failure.split("\n")[0]
        return JobResult(self.job_id, status, failure.split("\n")[0], failure, details)

    def collected(self) -> tuple[bytes, ...]:
        parts = super().collected()
        if self.collecting and not self._fetched:
            raise YarnError(f"job {self.job_id} finished, but its application {self.application_id} "
                            "ended before its result was fetched (it waits "
                            "pipeline.collect.result-timeout for it). Fix: run it again")
        return parts

    def savepoint(self, directory: str = "", timeout: float | None = None) -> str:
        return self._client().savepoint(self.job_id, directory, False,
                                        timeout or self._timeout * 60)

    def stop(self, directory: str = "", timeout: float | None = None) -> str:
        return self._client().savepoint(self.job_id, directory, True,
                                        timeout or self._timeout * 60)

    def cancel(self) -> None:
        try:
            self._client().cancel(self.job_id)
        except ApplicationEnded:
            return
        except YarnError:
            if not self._owns or self.result() is not None:
                raise
            from yarnflow.client.targets.yarn_apps import YarnApplication
            with YarnApplication(self.application_id, self._timeout, self._store) as app:
                app.kill()
