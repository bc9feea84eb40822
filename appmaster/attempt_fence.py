"""Which ApplicationMaster attempt owns the application's work on the cluster's file
system: FLIP-6's fencing tokens, for the one peer that takes no token, storage.

YARN starts a new attempt when it stops hearing from the current one: its host died,
or was cut off the network. A dead attempt touches nothing; a cut-off one goes on
running, and back on the network it fails its jobs (their executors are gone) and
cleans up after them, which would delete the staging directory and the stored results
of the very job the new attempt recovered. So each attempt claims its number with a
file under the application's directory, and every write, rename and delete that a
job's output depends on (a sink's setup, commit and abort, the stored results' removal,
the archive) asks first: a newer attempt's claim means this one was replaced, and it
touches nothing more. The question costs one listing of a small directory, asked at
those few moments of a job's life, never per record; once replaced, always replaced.

``NO_FENCE`` is for ``local`` and tests: there is no other attempt.
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from typing import Callable

from yarnflow.core.fs import FileSystem

log = logging.getLogger(__name__)

_CLAIM = re.compile(r"^attempt-(\d+)$")


class AttemptReplaced(RuntimeError):
    """This ApplicationMaster attempt was replaced: what was asked is left to the newer one."""


class AttemptFence:
    def __init__(self, fs: FileSystem | None, directory: str, attempt: int) -> None:
        self._fs = fs
        self.directory = directory.rstrip("/")
        self.attempt = attempt
        self._newer = 0
        self._lock = threading.Lock()

    def claim(self) -> None:
        """Say this attempt is the application's now. A claim that cannot be written is
        logged: the older attempt then cannot learn it was replaced, but this one still
        learns of newer ones."""
        if self._fs is None:
            return
        try:
            self._fs.mkdirs(self.directory)
            self._fs.write_whole(f"{self.directory}/attempt-{self.attempt}", b"")
            log.info("ApplicationMaster attempt %d claimed %s", self.attempt, self.directory)
        except Exception as err:   # noqa: BLE001 - named; the attempt runs on
            log.warning("could not claim %s for ApplicationMaster attempt %d (an older attempt "
                        "cut off the network would not know it was replaced): %s: %s",
                        self.directory, self.attempt, type(err).__name__, err)

    def newer_attempt(self) -> int:
        """The newest attempt after this one that claimed the application, 0 if none.
        Raises what the file system raises: whoever asks cannot know, so must not act."""
        with self._lock:
            if self._newer or self._fs is None:
                return self._newer
        claims = [int(m.group(1)) for name in self._fs.list_dir(self.directory)
                  if (m := _CLAIM.match(name))]
        newest = max(claims, default=0)
        with self._lock:
            if newest > self.attempt and not self._newer:
                self._newer = newest
                log.warning("ApplicationMaster attempt %d was replaced by attempt %d: it "
                            "touches nothing more on the cluster's file system", self.attempt,
                            newest)
            return self._newer

    def check(self, what: str) -> None:
        """Raises AttemptReplaced (naming ``what`` was left alone) if a newer attempt
        owns the application."""
        newer = self.newer_attempt()
        if newer:
            raise AttemptReplaced(f"ApplicationMaster attempt {self.attempt} was replaced by "
                                  f"attempt {newer}: {what} is left to it")

    def replaced(self) -> bool:
        """Whether a newer attempt owns the application; False when the file system
        cannot say (a caller that must not act then asks ``check``)."""
        try:
            return bool(self.newer_attempt())
        except Exception as err:   # noqa: BLE001 - unknown is not replaced
            log.info("could not read the attempts' claims in %s: %s", self.directory, err)
            return False


# Not 0: Skein's ApplicationMaster takes a driver that exits 0 for a finished application
# and, on its way out, deletes the application's staging directory on the cluster's file
# system, which holds the scripts the newer attempt launches its executors with. A
# non-zero exit from an attempt that is not the last leaves the directory alone.
REPLACED_EXIT_CODE = 3


def _exit_now(code: int) -> None:
    logging.shutdown()
    os._exit(code)


def exit_when_replaced(fence: AttemptFence, interval: float,
                       exit_process: Callable[[int], None] = _exit_now) -> threading.Thread:
    """Watch for a newer attempt's claim; once there is one, this process ends at once,
    touching nothing: no job is cancelled, aborted, archived or committed, and its
    server goes, so clients ask YARN again and find the attempt that replaced it. It
    exits with ``REPLACED_EXIT_CODE``, never 0 (see there). (YARN kills the container
    too, once the host's NodeManager is heard from again, but a host that was cut off
    may serve clients for a while before that.)"""
    def watch() -> None:
        while True:
            time.sleep(interval)
            if fence.replaced():
                log.warning("ApplicationMaster attempt %d was replaced: it exits without "
                            "touching its jobs' files", fence.attempt)
                exit_process(REPLACED_EXIT_CODE)
                return
    thread = threading.Thread(target=watch, name="attempt-fence", daemon=True)
    thread.start()
    return thread


NO_FENCE = AttemptFence(None, "", 1)
