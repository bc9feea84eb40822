"""Finished jobs' summaries, archived where they outlive the session (Flink's
HistoryServer archive, ``jobmanager.archive.fs.dir``): one ``<job_id>.pb`` JobDetails
per job in a history directory.

The directory is any fsspec location: on YARN a ``webhdfs://`` URL on the cluster's
file system (WebHDFS needs no Hadoop client libraries in the ApplicationMaster or on
the user's machine), locally a plain path. The archive knows files, not formats: what
a JobDetails is as bytes is the wire's (``yarnflow.rpc.codec.JOB_DETAILS``), which
whoever opens an archive passes in, so the model imports no protobuf.
"""
from __future__ import annotations

import getpass
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, NamedTuple

import fsspec

from yarnflow.core.details import JobDetails
from yarnflow.core.ids import JobID


class JobDetailsCodec(NamedTuple):
    encode: Callable[[JobDetails], bytes]
    decode: Callable[[bytes], JobDetails]


class JobFiles:
    """A directory of one ``<job_id>.pb`` per job on any fsspec file system, each file
    there whole or not at all: the job history, and a session's job graph store."""

    def __init__(self, location: str | Path, **storage_options: Any) -> None:
        """``storage_options`` go to fsspec (for WebHDFS: ``user``, the HDFS user
        with simple authentication)."""
        self.location = str(location)
        self._fs, self._dir = files_at(self.location, **storage_options)
        self._made = False
        self._making = threading.Lock()      # writes may come from several threads

    @property
    def directory(self) -> str:
        return self.location

    def _path(self, job_id: JobID) -> str:
        return f"{self._dir.rstrip('/')}/{job_id}.pb"

    def _make_directories(self) -> None:
        """The directories, made once: every job's write would otherwise ask again."""
        with self._making:
            if not self._made:
                self._create_directories()
                self._made = True

    def _create_directories(self) -> None:
        self._fs.makedirs(self._dir, exist_ok=True)

    def _write(self, job_id: JobID, data: bytes) -> str:
        """Written to a hidden temporary name and renamed, so a reader never sees half a
        file (a rename is atomic on HDFS and on local file systems)."""
        self._make_directories()
        target = self._path(job_id)
        tmp = f"{self._dir.rstrip('/')}/.{job_id}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            self._fs.pipe_file(tmp, data)
        except FileNotFoundError:          # someone removed the directory since
            self._create_directories()
            self._fs.pipe_file(tmp, data)
        try:
            self._fs.mv(tmp, target)
        except FileExistsError:            # archived before (by an earlier attempt)
            self._fs.rm(target)
            self._fs.mv(tmp, target)
        return target

    def _read(self, job_id: JobID) -> bytes:
        """FileNotFoundError when the job has no file here."""
        return bytes(self._fs.cat_file(self._path(job_id)))

    def job_ids(self) -> list[JobID]:
        try:
            names = self._fs.ls(self._dir, detail=False)
        except FileNotFoundError:
            return []
        stems = (name.rstrip("/").rsplit("/", 1)[-1] for name in names)
        return sorted(JobID(s[:-3]) for s in stems if s.endswith(".pb") and not s.startswith("."))


class JobArchive(JobFiles):
    def __init__(self, location: str | Path, codec: JobDetailsCodec, **storage_options: Any) -> None:
        super().__init__(location, **storage_options)
        self._codec = codec

    def store(self, details: JobDetails) -> str:
        return self._write(details.job_id, self._codec.encode(details))

    def load(self, job_id: JobID) -> JobDetails:
        try:
            data = self._read(job_id)
        except FileNotFoundError:
            known = ", ".join(self.job_ids()) or "none"
            raise KeyError(f"no archived job {job_id} in {self.location} "
                           f"(archived: {known})") from None
        return self._codec.decode(data)

    def all(self) -> list[JobDetails]:
        return sorted((self.load(job_id) for job_id in self.job_ids()),
                      key=lambda d: d.start_time)


def archived_job(location: str, job_id: JobID, codec: JobDetailsCodec,
                 kerberos: bool = False) -> JobDetails | None:
    """The job as archived in ``location``; None when it is not there or cannot be read
    (a client then says what it knows otherwise)."""
    if not location:
        return None
    try:
        return open_archive(location, codec, kerberos).load(job_id)
    except (KeyError, OSError, ValueError):
        return None


def files_at(location: str, **storage_options: Any) -> tuple[Any, str]:
    """fsspec's file system and path for ``location``; on WebHDFS yarnflow's, which
    writes a small file in one request and renames strictly (``core.fs.webhdfs``)."""
    if location.startswith("webhdfs://"):
        from yarnflow.core.fs.webhdfs import strict_webhdfs
        return strict_webhdfs(location, **storage_options)
    fs, path = fsspec.core.url_to_fs(location, **storage_options)
    return fs, str(path)


def storage_options(location: str | Path, kerberos: bool = False) -> dict[str, Any]:
    """WebHDFS with simple authentication acts as the user this process runs for (in a
    YARN container: the user who submitted the application); a container on a
    Kerberos cluster acts with its delegation token, a client with its ticket
    (``kerberos``)."""
    if not str(location).startswith("webhdfs://"):
        return {}
    return {"user": getpass.getuser(), **({"kerberos": True} if kerberos else {})}


def open_archive(location: str | Path, codec: JobDetailsCodec,
                 kerberos: bool = False) -> JobArchive:
    return JobArchive(location, codec, **storage_options(location, kerberos))
