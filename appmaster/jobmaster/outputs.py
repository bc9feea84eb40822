"""The sinks' outputs as the JobMaster sees them (Flink's InitializeOnMaster and
FinalizeOnMaster): each sink's staging made before any task writes, every output made
visible at once when the job finishes, and discarded when it does not. Tasks only ever
write into staging, so a restarted or abandoned attempt never shows in the output.

A session runs a job while the job graph store still writes it (the write and the
job's start overlap): its outputs are committed only once the job is admitted, that
is once the client can be told it was accepted, so a job whose admission failed
leaves no output behind.

A collect sink (``DataSet.collect()``) has no committer: each subtask's FINISHED report
carries its rows, and when every subtask finished they become the job's result, in
subtask order, if they fit ``pipeline.collect.max-result-size`` in all (Flink's
DataSet ``collect`` through accumulators; Spark's ``spark.driver.maxResultSize``). A
result too big fails the job before any output is committed.

While the job runs, each sink's lease on its output is renewed four times per
``heartbeat.timeout`` (the time after which it lapses), off the main thread (a slow
file system never holds the job up); a job that started writing an output another
job holds a fresh lease on is refused at setup. Renewal stops for good before the
commit or the discard, so no lease outlives its job's output.

An ApplicationMaster attempt that YARN replaced (``attempt_fence.py``) sets up,
commits and discards nothing: the job is the newer attempt's now."""
from __future__ import annotations

import logging
import threading
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Mapping

from yarnflow.appmaster.attempt_fence import NO_FENCE, AttemptFence, AttemptReplaced
from yarnflow.core.ids import ExecutionAttemptID
from yarnflow.appmaster.jobmaster.user_code import load_committer
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.operators.collect import too_large
from yarnflow.core.user_code import UserCode

if TYPE_CHECKING:
    from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph
    from yarnflow.core.operators.base import OutputCommitter

log = logging.getLogger(__name__)


class JobOutputs:
    def __init__(self, graph: JobGraph, admitted: "Future[None] | None" = None,
                 fence: AttemptFence = NO_FENCE, collect_limit: int = 64 * 2**20,
                 lease_timeout: float = 50.0, owner: str = "") -> None:
        """``admitted``: done once the job may leave output (None: it may at once);
        failed when it was not admitted. ``collect_limit``: the bytes a collected
        result may take in all. ``lease_timeout``: how long another job's unrenewed
        lease on an output keeps this one from writing it. ``owner``: the YARN
        application running the job, named in its leases ("" off YARN), so a client
        can learn from YARN that a crashed job's lease is dead."""
        self.job_id = graph.job_id
        self._owner = owner
        self._lease_timeout = lease_timeout
        self._renewing = threading.Lock()    # held by a renewal; ending waits for it
        self._ended = False                  # committed or discarded: no more renewals
        self._renewer: ThreadPoolExecutor | None = None
        self._fence = fence
        self._admitted = admitted
        self._received: list[tuple[str, str, UserCode[OutputCommitter]]] = [
            (v.id, v.name, v.committer) for v in graph.vertices.values() if v.committer]
        self._committers: list[tuple[str, str, OutputCommitter]] = []   # loaded by setup
        self._collects = [(v.id, v.name) for v in graph.vertices.values() if v.collect]
        self._collect_limit = collect_limit
        self.collected: tuple[bytes, ...] = ()     # set by gather
        # never taken over by a later attempt (job_events.py): a sink's output is the
        # ending attempt's to commit, and a collected result lived in the old one's memory
        self.sinks = frozenset([vertex_id for vertex_id, _, _ in self._received] +
                               [vertex_id for vertex_id, _ in self._collects])

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
                committer.setup(self.job_id, self._lease_timeout, self._owner)
            except Exception as err:   # noqa: BLE001 - a file system error, named below
                return f"sink '{name}' cannot write its output: {err}"
        return None

    def renew_leases(self) -> None:
        """Renew each sink's lease on a thread of its own; a renewal still under way
        (a slow file system) is not queued behind."""
        if not self._committers or self._ended or self._renewing.locked():
            return
        if self._renewer is None:
            self._renewer = ThreadPoolExecutor(1, thread_name_prefix=f"lease-{self.job_id[:8]}")
        self._renewer.submit(self._renew)

    def _renew(self) -> None:
        with self._renewing:
            for _, name, committer in [] if self._ended else self._committers:
                try:
                    committer.renew(self.job_id, self._owner)
                except Exception as err:   # noqa: BLE001 - the next renewal tries again
                    log.warning("renewing the lease of %s on its output failed: %s", name, err)

    def _end_leases(self) -> None:
        with self._renewing:
            self._ended = True
        if self._renewer is not None:
            self._renewer.shutdown(wait=False)

    def when_admitted(self, then: Callable[[], None]) -> bool:
        """True when the job's admission is settled; else False, and ``then()`` (on the
        thread that settles it) once it is."""
        if self._admitted is None or self._admitted.done():
            return True
        self._admitted.add_done_callback(lambda _: then())
        return False

    def gather(self, graph: "ExecutionGraph") -> tuple[str, str] | None:
        """Every subtask finished: the collect sinks' rows become the result, or the
        job fails (cause, detail) because they exceed the limit."""
        parts = [v.current.collected for vertex_id, _ in self._collects
                 for v in graph.job_vertices[vertex_id].task_vertices]
        size = sum(len(part) for part in parts)
        if size > self._collect_limit:
            return (too_large(self._collects[0][1], size, self._collect_limit,
                              f"from its {len(parts)} subtasks"), "")
        self.collected = tuple(parts)
        return None

    def commit(self, attempts: Mapping[str, dict[int, ExecutionAttemptID]]) -> tuple[str, str] | None:
        """``attempts``: per sink vertex, each subtask's attempt whose files count. The
        first sink that cannot be committed fails the job: (cause, detail). A job that
        was not admitted commits nothing (``when_admitted`` first)."""
        self._end_leases()
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
        self._end_leases()
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
