"""How a job's file output becomes visible all at once, on whatever file system it
lives (Hadoop's FileOutputCommitter, Flink's FinalizeOnMaster): the commit protocol
of ``sinks.py``'s file sinks, run by the JobMaster.

Names beside the target ``<dir>/<base>`` during job ``J``:

- ``<dir>/.<base>.yarnflow-staging-J/`` the job's output until it is committed;
- ``…-staging-J/_temporary/part-00003-<attempt>.parquet`` one task attempt's file;
- ``<dir>/.<base>.yarnflow-replaced-J/`` an older output for the moment that
  ``mode="overwrite"`` swaps it out;
- ``<dir>/.<base>.yarnflow-lease-J/renewed`` job J's claim on the output, rewritten
  by its JobMaster four times per ``heartbeat.timeout`` until the job has committed or
  discarded its output (HDFS's lease on a file being written, for a whole job). The
  directory goes with the claim, so a renewal that arrives late (from an
  ApplicationMaster cut off, then back) fails instead of bringing the claim back.

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
whose replacement did not complete; a job whose lease is fresh has not crashed, so a
second job writing its output refuses to start instead of clearing the first one's
staging. Fresh is judged by the file system's own time stamps (the lease's against
the new job's own lease, written just before), so hosts' clocks never compare.
"""
from __future__ import annotations

import contextlib
import copy
import json
import logging
import posixpath
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping, Sequence

from yarnflow.core.ids import ExecutionAttemptID, JobID
from yarnflow.core.fs import FileSystem, FileSystemSettings
from yarnflow.core.operators.files import BoundPaths, DataPathError, unreachable

log = logging.getLogger(__name__)

RENAME_THREADS = 16    # a commit's renames in flight at once
RENEWED = "renewed"    # the file in a job's lease directory its JobMaster rewrites


MODES = {"errorifexists": "errorifexists", "error": "errorifexists", "overwrite": "overwrite",
         "append": "append"}


def _lease_owner(fs: FileSystem, renewed: str) -> str:
    """The YARN application a lease names; "" for one that names none, or that is
    gone or unreadable (it is then left to lapse)."""
    try:
        with fs.open_input_stream(renewed) as stream:
            return str(json.loads(stream.read()).get("application", ""))
    except (OSError, ValueError, AttributeError):
        return ""


class DirectoryCommitter:
    """Commit protocol of one output directory: ``check_submittable`` in the client,
    ``setup`` / ``commit`` / ``abort`` in the JobMaster; a task writes ``attempt_file``."""

    def __init__(self, path: str, mode: str = "errorifexists", suffix: str = ".parquet",
                 partition_by: Sequence[str] = ()) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not one of "
                             f"{', '.join(sorted(set(MODES.values())))}")
        self.output = BoundPaths(path)
        self.mode = MODES[mode]
        self.suffix = suffix
        # Hive-style partition directories: an attempt writes a directory of them
        self.partition_by = tuple(partition_by)

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
        """What one attempt writes: a file, or with ``partition_by`` a directory that
        holds ``col=value/part-<subtask><suffix>`` files."""
        name = f"part-{subtask:05d}-{attempt_id}"
        return f"{self.staging(job_id)}/_temporary/{name}{'' if self.partition_by else self.suffix}"

    def task_file(self, subtask: int) -> str:
        """A committed file's name, relative to the output (and to a partition's directory)."""
        return f"part-{subtask:05d}{self.suffix}"

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
                "mode='overwrite' to replace it, or mode='append' to add to it")

    # --- the JobMaster -----------------------------------------------------------------
    def release_ended(self, ended: Callable[[str], bool]) -> list[str]:
        """Remove the leases beside the output whose jobs' YARN applications ``ended``
        (YARN's word: their ApplicationMasters are gone), so the next job clears what
        a crashed one left at once instead of being refused until its lease lapses.
        A lease that names no application (written off YARN) is left to lapse."""
        fs = self.fs
        parent, base = posixpath.split(fs.path(self.uri).rstrip("/"))
        prefix = f".{base}.yarnflow-lease-"
        try:
            names = [n for n in fs.list_dir(fs.uri(parent)) if n.startswith(prefix)]
        except FileNotFoundError:
            return []
        released = []
        for name in names:
            lease = fs.uri(f"{parent}/{name}")
            owner = _lease_owner(fs, f"{lease}/{RENEWED}")
            if owner and ended(owner):
                log.warning("removing %s: its job's YARN application %s has ended", lease, owner)
                fs.delete(lease)
                released.append(name[len(prefix):])
        return released

    def setup(self, job_id: JobID, lease_timeout: float, owner: str = "") -> None:
        """Claim the output, clear what crashed jobs left, make staging. Another job
        that renewed its lease within ``lease_timeout`` still writes the output: this
        one is refused, leaving nothing."""
        self.fs.mkdirs(self._sibling("lease", job_id))
        now = self.renew(job_id, owner)
        try:
            self.recover(job_id, now, lease_timeout)
            if self.mode == "errorifexists" and self.fs.exists(self.uri):
                raise DataPathError(self._exists_message())
            self.fs.mkdirs(f"{self.staging(job_id)}/_temporary")
        except BaseException:
            with contextlib.suppress(Exception):   # the refusal is the error to see
                self.fs.delete(self._sibling("lease", job_id))
            raise

    def renew(self, job_id: JobID, owner: str = "") -> float:
        """Rewrite the job's lease (naming the job and its YARN application); the time
        the file system stamped on it."""
        lease = f"{self._sibling('lease', job_id)}/{RENEWED}"
        with self.fs.open_output(lease) as out:
            out.write(json.dumps({"job": job_id, "application": owner}).encode())
        stamped = self.fs.modified(lease)
        if stamped is None:
            raise FileNotFoundError(f"the lease {lease} vanished as it was written")
        return stamped

    def recover(self, job_id: JobID, now: float, lease_timeout: float) -> None:
        """Clear what crashed jobs left beside the target (an older output moved aside
        by an overwrite whose second rename never happened is put back); refuse when
        another job's lease is younger than ``lease_timeout`` at ``now``."""
        fs = self.fs
        parent, base = posixpath.split(fs.path(self.uri).rstrip("/"))
        prefix = f".{base}.yarnflow-"
        names = [n for n in fs.list_dir(fs.uri(parent)) if n.startswith(prefix)]
        leftovers = [(name, *name[len(prefix):].partition("-")[::2]) for name in names]
        for name, kind, other in leftovers:
            renewed = fs.modified(fs.uri(f"{parent}/{name}/{RENEWED}")) if kind == "lease" \
                and other != job_id else None
            if renewed is not None and now - renewed < lease_timeout:
                raise DataPathError(
                    f"output {self.uri} is being written by job {other}, whose JobMaster "
                    f"renewed its lease {max(now - renewed, 0):.0f} s ago. Fix: wait for that "
                    "job to end (a crashed job's lease lapses after heartbeat.timeout), or "
                    "write elsewhere")
        for name, kind, other in leftovers:
            leftover = fs.uri(f"{parent}/{name}")
            if kind == "lease" and other == job_id:
                continue
            if kind == "replaced" and not fs.exists(self.uri) \
                    and f"{prefix}staging-{other}" in names:
                log.warning("restoring %s: job %s replaced it and crashed before its output "
                            "took its place", self.uri, other)
                fs.rename(leftover, self.uri)
            else:
                log.warning("removing %s, left by job %s that did not end", leftover, other)
                fs.delete(leftover)

    def commit(self, job_id: JobID, attempts: Mapping[int, ExecutionAttemptID]) -> None:
        """``attempts``: subtask index -> the attempt whose output counts (the one that
        finished in the job's successful run); other attempts' files are discarded."""
        fs, staging = self.fs, self.staging(job_id)
        if not fs.exists(staging):
            raise FileNotFoundError(f"the staging directory {staging} is gone: did another "
                                    "job writing the same output remove it?")
        written = set(fs.list_dir(f"{staging}/_temporary"))
        moves: list[tuple[str, str]] = []      # (an attempt's file, its name in the output)
        for subtask, attempt_id in sorted(attempts.items()):
            produced = self.attempt_file(job_id, subtask, attempt_id)
            if posixpath.basename(produced) not in written:   # it read no rows: no file
                continue
            if not self.partition_by:
                moves.append((produced, self.task_file(subtask)))
                continue
            root = fs.path(produced)
            moves.extend((file, posixpath.relpath(fs.path(file), root))
                         for file, _ in fs.list_tree(produced, self.suffix))
        self._move(moves, staging)
        fs.delete(f"{staging}/_temporary")      # attempts that do not count
        if self.mode == "append" and fs.exists(self.uri):
            self._move([(f"{staging}/{name}", self._appended(name, job_id)) for _, name in moves],
                       self.uri)
            fs.delete(staging)
            fs.delete(self._sibling("lease", job_id))
            return
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
        fs.delete(self._sibling("lease", job_id))

    def _move(self, moves: list[tuple[str, str]], into: str) -> None:
        """Each ``(file, name)`` renamed to ``into/name``, the partition directories
        the names hold made first; one round trip each on HDFS, so in parallel (a
        thousand subtasks' files one after another would hold the job's end for
        seconds). With ``mode="append"`` into an existing output this is a rename per
        file, not the one rename of a new output: a crash between them leaves the
        job's files partly added."""
        fs = self.fs
        directories = sorted({posixpath.dirname(name) for _, name in moves} - {""})
        with ThreadPoolExecutor(max_workers=RENAME_THREADS, thread_name_prefix="commit") as pool:
            list(pool.map(lambda d: fs.mkdirs(f"{into}/{d}"), directories))
            list(pool.map(lambda move: fs.rename(move[0], f"{into}/{move[1]}"), moves))

    def _appended(self, name: str, job_id: JobID) -> str:
        """A file's name when its job appends it: with the job's id, so it replaces no
        other job's file."""
        stem = name[:-len(self.suffix)] if self.suffix and name.endswith(self.suffix) else name
        return f"{stem}-{job_id}{self.suffix}"

    def abort(self, job_id: JobID) -> None:
        self.fs.delete(self.staging(job_id))
        self.fs.delete(self._sibling("lease", job_id))
