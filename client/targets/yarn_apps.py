"""A yarnflow application from the client, with its job (`yarnflow status`,
`cancel`): YARN's view (``yarn_report.py``) and, while the application runs, its
Dispatcher's over the application's mutual TLS (``DispatcherClient``); once it ended,
YARN's application report holds the outcome (final status and the job's failure
summary as diagnostics) and the archive holds the job's details."""
from __future__ import annotations

import logging

from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.client.targets.dispatcher_client import DispatcherClient
from yarnflow.client.targets.yarn_errors import YarnError
from yarnflow.client.targets.yarn_report import ApplicationStatus, YarnApplicationReport
from yarnflow.core.details import JobDetails
from yarnflow.core.ids import JobID

log = logging.getLogger(__name__)


class YarnApplication(YarnApplicationReport):
    """One submitted application, reached through YARN and, while it runs, its
    ApplicationMaster."""

    def __init__(self, app_id: str, timeout: float, store: ApplicationStore | None = None) -> None:
        super().__init__(app_id, timeout, store)
        self._dispatcher: DispatcherClient | None = None

    def close(self) -> None:
        if self._dispatcher is not None:
            self._dispatcher.close()

    def status(self, with_details: bool = True) -> ApplicationStatus:
        """YARN's report, with the job's details: live from the Dispatcher while the
        application runs, archived once it ended."""
        status = super().status()
        if with_details and status.state == "RUNNING":
            status.details = self.job_details()
        elif with_details and status.finished:
            status.details = self.archived_details()
        return status

    def archived_details(self) -> JobDetails | None:
        """An ended per-job application's job, as its ApplicationMaster archived it (its
        restarts and failures too); None for a session, or when the archive is gone."""
        info = self.store.info(self.app_id)
        if not info.get("job_id"):
            return None
        from yarnflow.client.targets.history import archived_job   # only for ended applications
        return archived_job(info.get("history", ""), info["job_id"])

    def job_details(self) -> JobDetails | None:
        """The job's details from the application's Dispatcher, or None while it is not
        up (or already gone)."""
        try:
            job_id = self.job_id or self._job_id_from_kv()
            return self._dispatcher_client().details(job_id) if job_id else None
        except (YarnError, KeyError):
            return None
        except Exception as err:   # skein.ConnectionError etc. once the application ended
            if type(err).__module__.startswith("skein"):
                return None
            raise

    def _dispatcher_client(self) -> DispatcherClient:
        if self._dispatcher is None:
            self._dispatcher = DispatcherClient(self.app_id, self.timeout, self.store)
        return self._dispatcher

    def _job_id_from_kv(self) -> JobID:
        self.appmaster_address()
        return self.job_id

    def savepoint(self, directory: str, terminate: bool, timeout: float) -> str:
        """A savepoint of the application's streaming job (then, with ``terminate``, it
        stops): its location once it completed."""
        self.status(with_details=False)          # raises naming an application that ended
        return self._dispatcher_client().savepoint(self.job_id or self._job_id_from_kv(),
                                                   directory, terminate, timeout)

    def cancel(self) -> ApplicationStatus:
        """Cancel the job through the Dispatcher (the application then ends KILLED); if
        that cannot be reached, or the application has not ended within twice the
        client's timeout after the cancel (an ApplicationMaster too busy or stuck to end
        it), have YARN kill the application: a cancel always ends it."""
        status = self.status(with_details=False)
        if status.finished:
            return status
        try:
            self._dispatcher_client().cancel(self.job_id or self._job_id_from_kv())
        except (YarnError, KeyError):
            self.kill()
            return self.wait_finished(self.timeout * 2)
        try:
            return self.wait_finished(self.timeout * 2)
        except YarnError as late:
            log.warning("%s; having YARN kill it", late)
        self.kill()
        return self.wait_finished(self.timeout * 2)
