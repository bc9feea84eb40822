"""Finished jobs' summaries, archived where they outlive the session (Flink's
HistoryServer archive): one ``<job_id>.pb`` JobDetails message per job in a history
directory. On YARN that directory is on the cluster's file system; locally any path."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from yarnflow.rpc.generated import jobmaster_pb2


class JobArchive:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def store(self, details: jobmaster_pb2.JobDetails) -> Path:
        """Written to a temporary name and renamed, so a reader never sees half a job."""
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / f"{details.job_id}.pb"
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(details.SerializeToString())
        os.replace(tmp, target)
        return target

    def load(self, job_id: str) -> jobmaster_pb2.JobDetails:
        path = self.directory / f"{job_id}.pb"
        if not path.exists():
            known = ", ".join(self.job_ids()) or "none"
            raise KeyError(f"no archived job {job_id} in {self.directory} (archived: {known})")
        return jobmaster_pb2.JobDetails.FromString(path.read_bytes())

    def job_ids(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.pb"))

    def all(self) -> list[jobmaster_pb2.JobDetails]:
        return sorted((self.load(job_id) for job_id in self.job_ids()),
                      key=lambda d: d.start_time)
