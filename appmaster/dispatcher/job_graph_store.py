"""The JobGraphs a session has accepted and not yet seen end, on the cluster's file
system (Flink's JobGraphStore): what lets a new ApplicationMaster attempt run again
every job the dead one had accepted.

One ``<job_id>.pb`` per job (the JobGraph as the client sent it, user code inside as
cloudpickle bytes) in a directory of the application's own beside the job history,
readable by the submitting user only. A job is written before its submission is
acknowledged and removed once it is archived: a job the client was told is accepted
is either in the store or in the history. Its id then stays in ``ended/``, so a later
attempt still lists the session's ended jobs (their details come from the history,
which other applications share).
"""
from __future__ import annotations

import posixpath

from yarnflow.core.ids import JobID
from yarnflow.core.history import JobFiles, storage_options


def job_graph_store_location(history_dir: str, application_id: str) -> str:
    """``<history>/../jobgraphs/<application id>``: next to the history, one directory
    per application, so attempts of one session find it and no other session does."""
    parent = posixpath.dirname(history_dir.rstrip("/"))
    return f"{parent}/jobgraphs/{application_id}"


class JobGraphStore(JobFiles):
    def __init__(self, location: str) -> None:
        super().__init__(location, **storage_options(location))
        self._ended = JobFiles(f"{location.rstrip('/')}/ended", **storage_options(location))

    def put(self, job_id: JobID, job_graph: bytes) -> None:
        """Durable when it returns."""
        if not self._fs.exists(self._dir):
            self._fs.makedirs(self._dir, exist_ok=True)
            # user code: for its owner's eyes only (WebHDFS takes the octal digits)
            webhdfs = "webhdfs" in self._fs.protocol
            self._fs.chmod(self._dir, "700" if webhdfs else 0o700)
        self._write(job_id, job_graph)

    def get(self, job_id: JobID) -> bytes:
        return self._read(job_id)

    def remove(self, job_id: JobID) -> None:
        """The job ended and is archived: it is not run again, and stays listed."""
        self._ended._write(job_id, b"")
        try:
            self._fs.rm(self._path(job_id))
        except FileNotFoundError:
            pass

    def ended_job_ids(self) -> list[JobID]:
        return self._ended.job_ids()

    def discard(self) -> None:
        """The application ended: nothing is left to run again."""
        try:
            self._fs.rm(self._dir, recursive=True)
        except FileNotFoundError:
            pass
