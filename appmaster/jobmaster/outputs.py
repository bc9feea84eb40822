"""The sinks' outputs as the JobMaster sees them (Flink's InitializeOnMaster and
FinalizeOnMaster): each sink's staging made before any task writes, every output made
visible at once when the job finishes, and discarded when it does not. Tasks only ever
write into staging, so a restarted or abandoned attempt never shows in the output.

A session runs a job while the job graph store still writes it (the write and the
job's start overlap): its outputs are committed only once the job is admitted, that
is once the client can be told it was accepted, so a job whose admission failed
leaves no output behind.

An ApplicationMaster attempt that YARN replaced (``attempt_fence.py``) sets up,
commits and discards nothing: the job is the newer attempt's now."""
from __future__ import annotations

import logging
import traceback
from concurrent.futures import Future
from typing import TYPE_CHECKING, Callable, Mapping

from yarnflow.appmaster.attempt_fence import NO_FENCE, AttemptFence, AttemptReplaced
from yarnflow.core.ids import ExecutionAttemptID
from yarnflow.appmaster.jobmaster.user_code import load_committer
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.user_code import UserCode

if TYPE_CHECKING:
    from yarnflow.core.operators.base import OutputCommitter

log = logging.getLogger(__name__)


class JobOutputs:
    def __init__(self, graph: JobGraph, admitted: "Future[None] | None" = None,
                 fence: AttemptFence = NO_FENCE) -> None:
        """``admitted``: done once the job may leave output (None: it may at once);
        failed when it was not admitted."""
        self.job_id = graph.job_id
        self._fence = fence
        self._admitted = admitted
        self._received: list[tuple[str, str, UserCode[OutputCommitter]]] = [
            (v.id, v.name, v.committer) for v in graph.vertices.values() if v.committer]
        self._committers: list[tuple[str, str, OutputCommitter]] = []   # loaded by setup
        self.sinks = frozenset(vertex_id for vertex_id, _, _ in self._received)

    def setup(self) -> str | None:
        """The committers loaded, then each sink's staging made. A failure here (a
        committer that does not load, the output exists, the file system refuses) ends
        the job before it starts; None when every sink is ready."""
        for vertex_id, name, code in self._received:
            try:
                self._committers.append((vertex_id, name, load_committer(code)))
            except Exception as err:   # noqa: BLE001 - user code: named below
                return f"sink '{name}': its committer cannot be loaded: {type(err).__name__}: {err}"
        try:
            self._fence.check("setting up the job's outputs")
        except Exception as err:   # noqa: BLE001 - replaced, or the file system cannot say
            return f"the job's outputs cannot be set up: {err}"
        for _, name, committer in self._committers:
            try:
                committer.setup(self.job_id)
            except Exception as err:   # noqa: BLE001 - a file system error, named below
                return f"sink '{name}' cannot write its output: {err}"
        return None

    def when_admitted(self, then: Callable[[], None]) -> bool:
        """True when the job's admission is settled; else False, and ``then()`` (on the
        thread that settles it) once it is."""
        if self._admitted is None or self._admitted.done():
            return True
        self._admitted.add_done_callback(lambda _: then())
        return False

    def commit(self, attempts: Mapping[str, dict[int, ExecutionAttemptID]]) -> tuple[str, str] | None:
        """``attempts``: per sink vertex, each subtask's attempt whose files count. The
        first sink that cannot be committed fails the job: (cause, detail). A job that
        was not admitted commits nothing (``when_admitted`` first)."""
        if self._admitted is not None and self._admitted.exception() is not None:
            return (f"the job was not accepted: {self._admitted.exception()}", "")
        try:
            self._fence.check("committing the job's outputs")
        except Exception as err:   # noqa: BLE001 - replaced, or the file system cannot say
            return (f"the job's outputs were not committed: {err}", "")
        for vertex_id, name, committer in self._committers:
            try:
                committer.commit(self.job_id, attempts[vertex_id])
            except Exception as err:   # noqa: BLE001 - a file system error, named below
                return (f"committing the output of {name} failed: {type(err).__name__}: {err}",
                        traceback.format_exc())
        return None

    def abort(self) -> None:
        if self._committers:
            try:
                self._fence.check("discarding the job's partial outputs")
            except AttemptReplaced as err:
                log.warning("%s", err)
                return
            except Exception as err:   # noqa: BLE001 - cannot say: touch nothing either
                log.warning("the job's partial outputs are left (whether a newer "
                            "ApplicationMaster attempt owns them cannot be read): %s", err)
                return
        for _, name, committer in self._committers:   # one never loaded staged nothing
            try:
                committer.abort(self.job_id)
            except Exception:
                log.exception("discarding the partial output of %s failed", name)
