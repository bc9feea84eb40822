"""The Dispatcher: one per ApplicationMaster. A session's takes many jobs; a per-job
application's serves its one job (Flink's MiniDispatcher), so clients reach both the
same way.

Each submitted job gets its own JobMaster and SlotPool on the session's shared
ResourceManager, so slots a finished job gives back serve the next job without a new
container, and executors (with their SparkSessions) stay warm between jobs. A job
whose slot profile fits no container size of the session is rejected before it
starts, naming the sizes on offer. Every job that ends is archived.

A job's collected result (``DataSet.collect()``) waits here for its client, which
fetches it as soon as it sees the job end: for ``pipeline.collect.result-timeout`` if
never fetched, and a short while after it was (an answer lost on the way is asked
for again). A per-job application ends only once its client fetched it, or that
timeout passed (``wait_fetched``).

Like its peers it keeps its state on one main thread (``rpc/endpoint.py``): the
callers' threads take a snapshot there and do the slow part (a file system, a
JobMaster's answer, waiting for a job) outside it, so nothing here needs a lock.
"""
from __future__ import annotations

import logging
from concurrent import futures
from typing import TYPE_CHECKING

from yarnflow.appmaster.settings import DispatcherSettings
from yarnflow.appmaster.attempt_fence import AttemptReplaced
from yarnflow.core.ids import JobID
from yarnflow.core.history import JobArchive
from yarnflow.core.clock import Deadline
from yarnflow.core.container_ladder import ContainerLadder, NoContainerFits
from yarnflow.core.details import JobDetails, JobResult, SessionOverview
from yarnflow.core.errors import EndpointStopped, JobRejected, Refused, UnknownJob
from yarnflow.core.jobgraph import JobGraph
from yarnflow.rpc.endpoint import MainThread, MainThreadExecutor

if TYPE_CHECKING:
    from yarnflow.appmaster.components import ApplicationMasterComponents, JobClient
    from yarnflow.appmaster.dispatcher.job_graph_store import JobGraphStore

log = logging.getLogger(__name__)
_KEPT_AFTER_FETCH = 30.0   # s: a fetched result stays for a retried fetch


class Dispatcher:
    def __init__(self, components: "ApplicationMasterComponents",
                 ladder: ContainerLadder | None, archive: JobArchive | None,
                 job_graphs: "JobGraphStore | None" = None,
                 main: MainThreadExecutor | None = None) -> None:
        """``job_graphs``: where a session keeps the jobs it accepted until they are
        archived, for the next ApplicationMaster attempt (``recover``)."""
        self._components = components
        self._settings = DispatcherSettings.of(components.config)    # read once, here
        self._ladder = ladder
        self._archive = archive
        self._job_graphs = job_graphs
        self.main: MainThreadExecutor = main or MainThread("dispatcher")
        self._clock = self.main.clock
        self._accepting: set[str] = set()            # submitted, JobMaster not made yet
        self._running: dict[str, "JobClient"] = {}
        self._finished: dict[str, JobDetails] = {}   # the newest, in order
        self._ended = 0
        # Archiving may talk to a remote file system: never on a JobMaster's thread.
        self._archiver = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="archive")
        self._archiving: list[futures.Future[None]] = []
        # writes to the job graph store, which submissions wait for in parallel
        self._keeper = futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="job-graph-store")
        self._closed = False
        # jobs an earlier attempt accepted, listed before this one serves: a client asking
        # about one meanwhile waits for recover() to run it again (it would be unknown)
        self._recovering: dict[JobID, futures.Future[None]] = {}
        # job -> (its collected result, monotonic time it is dropped at), and whether
        # its client fetched it
        self._collected: dict[str, tuple[tuple[bytes, ...], float]] = {}
        self._fetched: dict[str, futures.Future[None]] = {}

    def submit(self, graph: JobGraph, serialized: bytes | None = None) -> JobID:
        """Start the job's JobMaster; returns its job id once the job is accepted.
        ``graph`` is as received: its operators stay bytes here. ``serialized`` (the
        JobGraph as it came) goes to the job graph store, so an accepted job outlives
        this ApplicationMaster: the job starts while it is being written, commits its
        output only once it is written, and is acknowledged only then."""
        if self._components.fence.replaced():
            # a replaced attempt back on the network: the client asks YARN again and
            # finds the attempt that replaced this one
            raise EndpointStopped("this ApplicationMaster attempt was replaced by a newer one")
        self.main.call(self._accept, graph.job_id)
        kept: futures.Future[None] | None = None
        try:
            self._check_fits(graph)
            if self._job_graphs is not None and serialized is not None:
                kept = self._keeper.submit(self._job_graphs.put, graph.job_id, serialized)
            client = self._components.submit(graph, admitted=kept)
        except BaseException:
            self.main.execute(self._accepting.discard, graph.job_id)
            if kept is not None:
                kept.add_done_callback(lambda _: self._unkeep(graph.job_id))
            raise
        self.main.call(self._started, client)
        if kept is not None:
            self._await_kept(graph, kept, client)
        client.job_master.add_termination_listener(self._job_ended)
        log.info("accepted job %s (%s)", graph.name, client.job_id)
        return client.job_id

    def _await_kept(self, graph: JobGraph, kept: "futures.Future[None]", client: "JobClient") -> None:
        """The job is acknowledged once its graph is durable; if it cannot be, the job
        (already running) is cancelled and its submission rejected."""
        assert self._job_graphs is not None
        timeout = self._settings.job_graph_store_write_timeout
        try:
            kept.result(timeout=timeout)
            return
        except futures.TimeoutError:
            cause = f"the write did not end within {timeout:g} s " \
                    "(session.job-graph-store.write-timeout)"
        except Exception as err:   # noqa: BLE001 - a file system error, named below
            cause = str(err) or type(err).__name__
        # whatever the write left (it may yet end): a rejected job is not run again
        kept.add_done_callback(lambda _: self._unkeep(graph.job_id))
        client.job_master.cancel()
        client.job_master.add_termination_listener(self._job_ended)
        raise JobRejected(f"the session could not keep job {graph.name} on the cluster file "
                          f"system ({self._job_graphs.location}): {cause}")

    def _unkeep(self, job_id: JobID) -> None:
        """A job that was not accepted leaves the store (it was written all the same)."""
        assert self._job_graphs is not None
        try:
            self._job_graphs.discard_job(job_id)
        except Exception:   # a later attempt would run it: say so
            log.exception("job %s was rejected but stays in %s", job_id, self._job_graphs.location)

    def _accept(self, job_id: JobID) -> None:
        if self._closed:
            raise JobRejected("this session is shutting down; start a new one with "
                              "`yarnflow session start`")
        if job_id in self._accepting or job_id in self._running or job_id in self._finished:
            raise JobRejected(f"job {job_id} was already submitted to this session")
        self._accepting.add(job_id)

    def _started(self, client: "JobClient") -> None:
        self._accepting.discard(client.job_id)
        self._running[client.job_id] = client

    def _check_fits(self, graph: JobGraph) -> None:
        if self._ladder is None:
            return
        default_slot = self._settings.default_slot
        for group in graph.slot_sharing_groups():
            try:
                self._ladder.spec_for(graph.slot_profile(group, default_slot))
            except NoContainerFits as err:
                raise JobRejected(f"job {graph.name} ({graph.job_id}), slot sharing group "
                                  f"'{group}': {err}") from None

    def _job_ended(self, result: JobResult) -> None:
        """On the JobMaster's thread, before it announces the end: whoever waits for the
        job then finds it among the ended ones. (This main thread never waits for a
        JobMaster's, so the two cannot wait for each other.)"""
        try:
            self.main.call(self._archive_result, result)
        except EndpointStopped:
            log.warning("job %s ended after the Dispatcher stopped: not archived", result.job_id)

    def _archive_result(self, result: JobResult) -> None:
        details = result.details
        capacity = self._settings.jobstore_max_capacity
        self._running.pop(result.job_id, None)
        self._finished[result.job_id] = details
        self._ended += 1
        self._keep_collected(result)
        while len(self._finished) > capacity and self._archive is not None:
            # the oldest ended job leaves memory; details() reads it back from the archive
            self._finished.pop(next(iter(self._finished)))
        if self._archive is not None:
            self._archiving = [f for f in self._archiving if not f.done()]
            self._archiving.append(self._archiver.submit(self._store, details))

    def _keep_collected(self, result: JobResult) -> None:
        now = self._clock.monotonic()
        for job_id in [j for j, (_, until) in self._collected.items() if until <= now]:
            del self._collected[job_id]
            self._fetched.pop(job_id, None)
        if result.collected:
            timeout = self._settings.collect_result_timeout
            self._collected[result.job_id] = (result.collected, now + timeout)
            self._fetched.setdefault(result.job_id, futures.Future())

    def fetch_collected(self, job_id: JobID) -> tuple[bytes, ...]:
        """The job's collected result, one Arrow IPC stream per subtask (b"" for one
        that had no rows). A client may see the job FINISHED a moment before its
        JobMaster announced the end (it frees its slots first): the result is kept here
        then, so a job still running is waited for, up to rpc.ask-timeout."""
        running = self.main.call(self._running.get, job_id)
        if running is not None:
            try:
                running.wait(self._settings.rpc_timeout)
            except futures.TimeoutError:
                pass      # it has not ended: answered below

        def take() -> tuple[bytes, ...] | None:
            kept = self._collected.get(job_id)
            if kept is None or kept[1] <= self._clock.monotonic():
                return None
            self._collected[job_id] = (kept[0], min(kept[1], self._clock.monotonic()
                                                    + _KEPT_AFTER_FETCH))
            fetched = self._fetched.get(job_id)
            if fetched is not None and not fetched.done():
                fetched.set_result(None)
            return kept[0]
        parts = self.main.call(take)
        if parts is None:
            raise UnknownJob(f"job {job_id} has no collected result here: it did not collect, "
                             "has not ended, or its result was dropped after "
                             "pipeline.collect.result-timeout")
        return parts

    def wait_fetched(self, job_id: JobID, timeout: float) -> bool:
        """Block until the job's client fetched its collected result (True; also when
        there is none) or ``timeout`` passed (False)."""
        fetched = self.main.call(self._fetched.get, job_id)
        if fetched is None:
            return True
        try:
            fetched.result(timeout)
            return True
        except futures.TimeoutError:
            return False

    def _store(self, details: JobDetails) -> None:
        archive = self._archive
        assert archive is not None          # only scheduled with an archive
        try:
            self._components.fence.check(f"archiving job {details.job_id}")
            where = archive.store(details)
            log.info("archived job %s to %s", details.job_id, where)
        except AttemptReplaced as err:     # the newer attempt archives it
            log.warning("%s", err)
            return
        except Exception:   # the job's outcome stays in memory meanwhile
            log.exception("archiving job %s to %s failed", details.job_id, archive.directory)
            return
        self._forget_job_graph(details.job_id)

    def _forget_job_graph(self, job_id: JobID) -> None:
        """Once the job is in the history, no later attempt runs it again."""
        if self._job_graphs is None:
            return
        try:
            self._components.fence.check(f"removing job {job_id} from the job graph store")
            self._job_graphs.remove(job_id)
        except AttemptReplaced as err:
            log.warning("%s", err)
        except Exception:   # a later attempt finds it archived and skips it
            log.exception("removing job %s from %s failed", job_id, self._job_graphs.location)

    def expect_recovery(self) -> None:
        """Before this attempt serves clients: the jobs the store holds are this
        session's, so a call about one waits until ``recover`` ran it again (or found it
        ended) instead of answering that the session has no such job."""
        if self._job_graphs is None:
            return
        job_ids = self._job_graphs.job_ids()
        self.main.call(lambda: self._recovering.update(
            {job_id: futures.Future() for job_id in job_ids}))

    def _recovery_of(self, job_id: JobID) -> None:
        """Wait (``rpc.ask-timeout`` at most) until ``recover`` is past ``job_id``."""
        pending = self.main.call(self._recovering.get, job_id)
        if pending is None:
            return
        timeout = self._settings.rpc_timeout
        try:
            pending.result(timeout)
        except futures.TimeoutError:
            raise Refused(f"job {job_id} is being recovered by this session's new "
                          f"ApplicationMaster attempt; try again in a few seconds") from None

    def _recovered(self, job_id: JobID) -> None:
        pending = self.main.call(self._recovering.pop, job_id, None)
        if pending is not None:
            pending.set_result(None)

    def recover(self) -> list[JobID]:
        """A new ApplicationMaster attempt: run again, under their ids, the jobs an
        earlier attempt accepted and did not see end; those archived meanwhile are only
        dropped from the store. Returns the ids of the jobs run again."""
        if self._job_graphs is None:
            return []
        try:
            return self._recover()
        finally:
            for job_id in self.main.call(lambda: list(self._recovering)):
                self._recovered(job_id)

    def _recover(self) -> list[JobID]:
        assert self._job_graphs is not None
        from yarnflow.rpc.codec import jobgraph_as_received
        recovered = []
        for job_id in self._job_graphs.job_ids():
            if self._archive is not None:
                try:
                    if self._archive.load(job_id).status.is_globally_terminal:
                        self._forget_job_graph(job_id)
                        self._recovered(job_id)
                        continue
                except (KeyError, OSError):
                    pass
            try:
                graph = jobgraph_as_received(self._job_graphs.get(job_id))
                self.submit(graph)
            except Exception:   # one unreadable job must not stop the others
                log.exception("could not run job %s again", job_id)
                continue
            finally:
                self._recovered(job_id)
            log.info("running job %s (%s) again: an earlier ApplicationMaster attempt had "
                     "accepted it", graph.name, job_id)
            recovered.append(job_id)
        self._recall_ended()
        return recovered

    def _recall_ended(self) -> None:
        """The jobs earlier attempts saw end stay in this session's list (the newest
        ``jobstore.max-capacity`` of them in memory, as if this attempt had run them)."""
        if self._job_graphs is None or self._archive is None:
            return
        capacity = self._settings.jobstore_max_capacity
        recalled = []
        for job_id in self._job_graphs.ended_job_ids():
            try:
                recalled.append(self._archive.load(job_id))
            except (KeyError, OSError, ValueError):
                log.warning("job %s ended in an earlier attempt but is not in the history at %s",
                            job_id, self._archive.directory)
        recalled.sort(key=lambda d: d.start_time)

        def remember() -> None:
            self._ended += len(recalled)
            for details in recalled[-capacity:]:
                self._finished.setdefault(details.job_id, details)
        self.main.call(remember)

    def list_jobs(self) -> list[JobDetails]:
        """Running jobs first (live), then finished ones (as archived), oldest first."""
        running, finished = self.main.call(
            lambda: (list(self._running.values()), list(self._finished.values())))
        live = []
        for client in running:
            try:
                live.append(client.details())
            except Exception:   # noqa: BLE001 - it ended meanwhile: it is in finished now
                pass
        return sorted(live, key=lambda d: d.start_time) + \
            sorted(finished, key=lambda d: d.start_time)

    def _with_warnings(self, details: JobDetails) -> JobDetails:
        """A live job's details with what the application warns of (its tokens)."""
        rm = self._components.resource_manager
        said = rm.main.call(rm.token_manager.warning)
        if said:
            details.warnings = [*details.warnings, said]
        return details

    def details(self, job_id: JobID) -> JobDetails:
        self._recovery_of(job_id)
        client, finished = self.main.call(
            lambda: (self._running.get(job_id), self._finished.get(job_id)))
        if finished is not None:
            return finished
        if client is not None:
            return self._with_warnings(client.details())
        if self._archive is not None:
            try:
                return self._archive.load(job_id)   # ended long ago: out of memory
            except (KeyError, OSError):
                pass
        raise UnknownJob(f"no job {job_id} in this session; `yarnflow list` shows its jobs")

    def cancel(self, job_id: JobID) -> None:
        self._recovery_of(job_id)
        client, done = self.main.call(
            lambda: (self._running.get(job_id), job_id in self._finished))
        if done:
            raise Refused(f"job {job_id} has already ended")
        if client is None:
            raise UnknownJob(f"no job {job_id} in this session; `yarnflow list` shows its jobs")
        client.cancel()

    def savepoint(self, job_id: JobID, directory: str, terminate: bool) -> str:
        """A savepoint of a running job (then, with ``terminate``, it stops); waits for
        it, as long as a checkpoint may take."""
        self._recovery_of(job_id)
        client = self.main.call(self._running.get, job_id)
        if client is None:
            raise UnknownJob(f"no running job {job_id} in this session; `yarnflow list` "
                             "shows its jobs")
        location: str = client.savepoint(directory, terminate).result()
        return location

    def wait(self, job_id: JobID, timeout: float | None) -> JobDetails:
        """Block until the job ended (or ``timeout``), then its archived summary."""
        self._recovery_of(job_id)
        client = self.main.call(self._running.get, job_id)
        if client is not None:
            client.wait(timeout)
        return self.details(job_id)

    def counts(self) -> tuple[int, int]:
        """(running, finished) jobs."""
        return self.main.call(lambda: (len(self._running), self._ended))

    def overview(self) -> SessionOverview:
        cluster = self._components.overview()
        running, finished = self.counts()
        return SessionOverview(
            self._archive.directory if self._archive is not None else "",
            self._ladder.describe() if self._ladder is not None else "", len(cluster.workers),
            sum(w.free_slots for w in cluster.workers), sum(w.num_slots for w in cluster.workers),
            running, finished)

    def cancel_all(self) -> None:
        for client in self.main.call(lambda: list(self._running.values())):
            client.cancel()

    def close(self, timeout: float) -> None:
        """Refuse new jobs, cancel running ones, and wait (up to ``timeout`` in all) until
        each is archived, so the history outlives the session."""
        def refuse_new() -> list["JobClient"]:
            self._closed = True
            return list(self._running.values())
        running = self.main.call(refuse_new)
        self.cancel_all()
        deadline = Deadline(self._clock, timeout)
        for client in running:
            try:
                client.wait(max(0.1, deadline.left()))
            except Exception:   # noqa: BLE001 - a timeout: log it and archive what we have
                log.warning("job %s did not end within the shutdown timeout", client.job_id)
        # the last jobs' archiving was queued on the main thread when they ended
        pending = self.main.call(lambda: list(self._archiving))
        done, not_done = futures.wait(pending, timeout=max(0.1, deadline.left()))
        if not_done:
            log.warning("%d job archives were still being written at shutdown", len(not_done))
        self._archiver.shutdown(wait=False)
        self._keeper.shutdown(wait=False)

    def stop(self) -> None:
        """After ``close``, once nothing asks any more (the server is stopped): its
        main thread goes. Until then the ended jobs are still listed and shown."""
        self.main.shutdown()
