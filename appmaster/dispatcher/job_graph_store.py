"""The JobGraphs a session has accepted and not yet seen end, on the cluster's file
system (Flink's JobGraphStore): what lets a new ApplicationMaster attempt run again
every job the dead one had accepted.

One ``<job_id>.pb`` per job (the JobGraph as the client sent it, user code inside as
cloudpickle bytes) in a directory of the application's own beside the job history,
readable by the submitting user only. A job is written before its submission is
acknowledged and moved to ``ended/`` once it is archived: a job the client was told
is accepted is either in the store or in the history, and ``ended/`` lets a later
attempt still list the session's ended jobs (their details come from the history,
which other applications share).

Writing a job is on every submission's path, so it costs one file creation: the
directories are made once per store, and on HDFS the file is created with its bytes
and its mode in one WebHDFS CREATE (no mkdir, chmod or rename per job). A file cut
short by a writer that died can only belong to a job that was never acknowledged; a
later attempt cannot read it and skips it.
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
        self._webhdfs = "webhdfs" in self._fs.protocol

    def _create_directories(self) -> None:
        """The store's directory (user code: for its owner's eyes only) and ``ended/``."""
        self._fs.makedirs(self._ended._dir, exist_ok=True)
        self._fs.chmod(self._dir, "700" if self._webhdfs else 0o700)   # WebHDFS: octal digits

    def put(self, job_id: JobID, job_graph: bytes) -> None:
        """Durable when it returns (HDFS has the file closed). Refuses to replace a
        job's graph: a job id is accepted once."""
        self._make_directories()
        path = self._path(job_id)
        if not self._webhdfs:
            self._write(job_id, job_graph)      # a local rename costs nothing
            return
        fs = self._fs
        created = fs._call("CREATE", method="put", path=path, redirect=False,
                           overwrite="false", permission="600")
        fs.session.put(fs._apply_proxy(created.headers["Location"]), data=job_graph,
                       headers={"content-type": "application/octet-stream"}).raise_for_status()

    def get(self, job_id: JobID) -> bytes:
        return self._read(job_id)

    def remove(self, job_id: JobID) -> None:
        """The job ended and is archived: it is not run again, and stays listed (one
        rename into ``ended/``)."""
        self._make_directories()
        try:
            self._fs.mv(self._path(job_id), self._ended._path(job_id))
        except FileNotFoundError:
            pass

    def discard_job(self, job_id: JobID) -> None:
        """A job that was written but not accepted: gone, as if never submitted."""
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
