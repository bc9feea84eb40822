"""Sinks: where results go, and how a job's output becomes visible all at once, on
whatever file system it lives (Hadoop's FileOutputCommitter, Flink's FinalizeOnMaster).

Names beside the target ``<dir>/<base>`` during job ``J``:

- ``<dir>/.<base>.yarnflow-staging-J/`` the job's output until it is committed;
- ``…-staging-J/_temporary/part-00003-<attempt>.parquet`` one task attempt's file;
- ``<dir>/.<base>.yarnflow-replaced-J/`` an older output for the moment that
  ``mode="overwrite"`` swaps it out.

The JobMaster sets the staging directory up before any task runs. Tasks only write
their attempt's file. When the job has FINISHED, the JobMaster commits: the file of
each subtask's finished attempt becomes ``…-staging-J/part-00003.parquet``, every
other attempt's file (a failed one, a restarted one, a frozen one that woke up late)
is deleted with ``_temporary``, and the staging directory is renamed onto the target:
one rename, atomic on HDFS and local disks. After any number of restarts the output
holds each subtask's rows once.

A failed or cancelled job's staging directory is deleted. Task files are created
without their parent directory, so a task that outlives the abort fails instead of
bringing staging back. What a crash leaves (an ApplicationMaster killed mid-job, or
mid-commit) the next job writing the same output clears, restoring an older output
whose replacement did not complete.
"""
from __future__ import annotations

import copy
import logging
import posixpath
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping

import pyarrow.parquet as pq

from yarnflow.core.ids import ExecutionAttemptID, JobID
from yarnflow.core.fs import FileSystem, FileSystemSettings
from yarnflow.core.operators.base import BatchProcessor, OneInputOperator, OperatorContext
from yarnflow.core.operators.files import BoundPaths, DataPathError, unreachable

log = logging.getLogger(__name__)

RENAME_THREADS = 16    # a commit's renames in flight at once

MODES = {"errorifexists": "errorifexists", "error": "errorifexists", "overwrite": "overwrite"}


class DirectoryCommitter:
    """Commit protocol of one output directory: ``check_submittable`` in the client,
    ``setup`` / ``commit`` / ``abort`` in the JobMaster; a task writes ``attempt_file``."""

    def __init__(self, path: str, mode: str = "errorifexists") -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not one of "
                             f"{', '.join(sorted(set(MODES.values())))}")
        self.output = BoundPaths(path)
        self.mode = MODES[mode]

    def bound(self, settings: FileSystemSettings) -> "DirectoryCommitter":
        bound = copy.copy(self)
        bound.output = self.output.bound(settings, "output")
        return bound

    @property
    def uri(self) -> str:
        return self.output.resolved()[0]

    @property
    def fs(self) -> FileSystem:
        return self.output.filesystem(self.uri)

    # --- names -----------------------------------------------------------------------
    def _sibling(self, kind: str, job_id: JobID) -> str:
        parent, base = posixpath.split(self.fs.path(self.uri).rstrip("/"))
        return self.fs.uri(f"{parent}/.{base}.yarnflow-{kind}-{job_id}")

    def staging(self, job_id: JobID) -> str:
        return self._sibling("staging", job_id)

    def attempt_file(self, job_id: JobID, subtask: int, attempt_id: ExecutionAttemptID) -> str:
        return f"{self.staging(job_id)}/_temporary/part-{subtask:05d}-{attempt_id}.parquet"

    def task_file(self, job_id: JobID, subtask: int) -> str:
        return f"{self.staging(job_id)}/part-{subtask:05d}.parquet"

    # --- the client, before submission -------------------------------------------------
    def check_submittable(self) -> None:
        """The default mode refuses an existing output (Spark's ``errorifexists``); an
        output the user may not write is refused too, before any work is done."""
        try:
            if self.fs.check_writable(self.uri) and self.mode == "errorifexists":
                raise DataPathError(self._exists_message())
        except PermissionError as err:
            raise DataPathError(f"output {self.uri} cannot be written: {err}. Fix: write where this "
                                "user may, or get write access to it") from None
        except DataPathError:
            raise
        except OSError as err:
            raise unreachable(self.uri, err) from None

    def _exists_message(self) -> str:
        return (f"output {self.uri} already exists. Fix: write elsewhere, or "
                "write_parquet(path, mode='overwrite') to replace it")

    # --- the JobMaster -----------------------------------------------------------------
    def setup(self, job_id: JobID) -> None:
        self.recover()
        if self.mode == "errorifexists" and self.fs.exists(self.uri):
            raise DataPathError(self._exists_message())
        self.fs.mkdirs(f"{self.staging(job_id)}/_temporary")

    def recover(self) -> None:
        """Clear what crashed jobs left beside the target. An older output moved aside
        by an overwrite whose second rename never happened is put back."""
        fs = self.fs
        parent, base = posixpath.split(fs.path(self.uri).rstrip("/"))
        prefix = f".{base}.yarnflow-"
        names = [n for n in fs.list_dir(fs.uri(parent)) if n.startswith(prefix)]
        for name in names:
            kind, _, job_id = name[len(prefix):].partition("-")
            leftover = fs.uri(f"{parent}/{name}")
            if kind == "replaced" and not fs.exists(self.uri) \
                    and f"{prefix}staging-{job_id}" in names:
                log.warning("restoring %s: job %s replaced it and crashed before its output "
                            "took its place", self.uri, job_id)
                fs.rename(leftover, self.uri)
            else:
                log.warning("removing %s, left by job %s that did not end", leftover, job_id)
                fs.delete(leftover)

    def commit(self, job_id: JobID, attempts: Mapping[int, ExecutionAttemptID]) -> None:
        """``attempts``: subtask index -> the attempt whose output counts (the one that
        finished in the job's successful run); other attempts' files are discarded."""
        fs, staging = self.fs, self.staging(job_id)
        if not fs.exists(staging):
            raise FileNotFoundError(f"the staging directory {staging} is gone: did another "
                                    "job writing the same output remove it?")
        written = set(fs.list_dir(f"{staging}/_temporary"))
        moves = []
        for subtask, attempt_id in sorted(attempts.items()):
            name = posixpath.basename(self.attempt_file(job_id, subtask, attempt_id))
            if name in written:           # an attempt that read no rows wrote no file
                moves.append((f"{staging}/_temporary/{name}", self.task_file(job_id, subtask)))
        # one round trip each on HDFS: a thousand subtasks' files one after another
        # would hold the job's end for seconds
        with ThreadPoolExecutor(max_workers=RENAME_THREADS, thread_name_prefix="commit") as pool:
            list(pool.map(lambda move: fs.rename(*move), moves))   # raises the first failure
        fs.delete(f"{staging}/_temporary")      # attempts that do not count
        try:
            fs.rename(staging, self.uri)          # refuses an existing output
        except FileExistsError:
            if self.mode != "overwrite":
                raise FileExistsError(f"{self._exists_message()} (it appeared while the "
                                      "job ran)") from None
            replaced = self._sibling("replaced", job_id)
            fs.rename(self.uri, replaced)
            fs.rename(staging, self.uri)
            fs.delete(replaced)

    def abort(self, job_id: JobID) -> None:
        self.fs.delete(self.staging(job_id))


class ParquetSink(OneInputOperator):
    """Each subtask attempt writes one Parquet file into the job's staging directory;
    the JobMaster commits the finished attempts' files (see DirectoryCommitter)."""

    def __init__(self, path: str, mode: str = "errorifexists") -> None:
        self.path = path
        self.committer = DirectoryCommitter(path, mode)

    def bound(self, settings: FileSystemSettings) -> "ParquetSink":
        bound = copy.copy(self)
        bound.committer = self.committer.bound(settings)
        return bound

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return _ParquetWriting(self.committer,
                               self.committer.attempt_file(ctx.job_id, ctx.subtask_index,
                                                           ctx.attempt_id))


class _ParquetWriting(BatchProcessor):
    """One attempt's file, opened with its first batch (an attempt that got none writes
    none); a run that fails leaves no part of it behind."""

    def __init__(self, committer: DirectoryCommitter, temp: str) -> None:
        self._committer = committer
        self._temp = temp
        self._writer: pq.ParquetWriter | None = None
        self._stream: Any = None

    def process(self, batch: Any) -> None:
        if self._writer is None:
            self._stream = self._committer.fs.open_output(self._temp)
            self._writer = pq.ParquetWriter(self._stream, batch.schema)
        self._writer.write_batch(batch)

    def finish(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        self._writer = None
        self._stream.close()
        self._stream = None

    def close(self) -> None:
        writer, stream = self._writer, self._stream
        self._writer = self._stream = None
        for closable in (writer, stream):
            try:
                if closable is not None:
                    closable.close()
            except Exception:  # noqa: BLE001 - the failure being raised already says what went wrong
                pass
        if writer is not None or stream is not None:
            try:
                self._committer.fs.delete(self._temp)
            except Exception:
                log.warning("could not remove %s", self._temp, exc_info=True)
