"""A session on the local target: the Dispatcher runs many jobs on one shared
ResourceManager; warm executors serve later jobs; finished jobs stay queryable."""
from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from tests.conftest import FAST, wait_until
from yarnflow.core.history import JobArchive
from yarnflow.rpc.codec import JOB_DETAILS
from yarnflow.core.errors import JobRejected
from yarnflow.core.status import ExecutionState, JobStatus
from yarnflow.conf import Configuration, options

from yarnflow.client.targets.local import LocalCluster

TABLE = pa.table({"x": pa.array(range(2000), pa.int64())})
SESSION = FAST + ["pipeline.batch-rows=100", "resourcemanager.taskmanager-timeout=3 s",
                  "session.container-sizes=1c-1536m, 2c-2048m"]
# The held-write tests hold the job graph store's write while the whole job runs; on a
# busy machine an executor's start alone can outlast the 10 s default, and the session
# then (rightly) cancels the job: they give the write as long as they hold it.
HELD_S = 300.0
HELD = [f"session.job-graph-store.write-timeout={HELD_S:g} s"]


def slow(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.05)         # the workload: each batch keeps its task busy a while
    return batch


def held_until(gate):
    """A ``slow`` that also holds every batch until ``gate`` exists (the test's word to
    go on), so two jobs are surely running at the same moment on a busy machine."""
    gate = str(gate)

    def held(batch: pa.RecordBatch) -> pa.RecordBatch:
        import os
        for _ in range(2400):          # 120 s at most: then the test has failed anyway
            if os.path.exists(gate):
                break
            time.sleep(0.05)
        return slow(batch)
    return held


def job(name: str, out, config, parallelism: int = 2, resources=None, gate=None):
    p = yf.Pipeline(name, parallelism=parallelism)
    ds = p.from_arrow(TABLE).map(slow if gate is None else held_until(gate), name="slow")
    if resources is not None:
        ds = ds.resources(resources)
    ds.write_parquet(str(out))
    return p.job_graph(config)


def all_running(dispatcher, job_id: str) -> bool:
    subtasks = dispatcher.details(job_id).vertex_running("slow").subtasks
    return bool(subtasks) and all(s.state is ExecutionState.RUNNING for s in subtasks)


@pytest.fixture
def config():
    return Configuration.load(overrides=SESSION)


def test_jobs_share_the_session_and_finished_ones_stay_queryable(tmp_path, config):
    history = tmp_path / "history"
    config.set(options.SESSION_HISTORY_DIR, str(history))
    with LocalCluster(config, session=True, min_executors=1) as session:
        dispatcher = session.dispatcher
        gate = tmp_path / "go"
        a = dispatcher.submit(job("a", tmp_path / "a", config, gate=gate))
        b = dispatcher.submit(job("b", tmp_path / "b", config, gate=gate))
        # both run at once on the session's executors ...
        wait_until(lambda: all_running(dispatcher, a) and all_running(dispatcher, b), 60,
                   "both jobs running at once")
        # ... and cancelling one leaves the other alone
        dispatcher.cancel(a)
        assert dispatcher.wait(a, 60).status is JobStatus.CANCELED
        gate.touch()
        done_b = dispatcher.wait(b, 120)
        assert done_b.status is JobStatus.FINISHED, done_b.failure
        assert pq.read_table(tmp_path / "b").sort_by("x").equals(TABLE)
        assert not (tmp_path / "a").exists()

        # a third job runs on the warm executors: no new one is started
        started = dict(session.overview().workers_started_per_spec)
        c = dispatcher.submit(job("c", tmp_path / "c", config))
        assert dispatcher.wait(c, 120).status is JobStatus.FINISHED
        assert dict(session.overview().workers_started_per_spec) == started
        assert pq.read_table(tmp_path / "c").num_rows == TABLE.num_rows

        # a job needing more than the largest size is refused; the session serves on
        with pytest.raises(JobRejected) as refused:
            dispatcher.submit(job("huge", tmp_path / "h", config,
                                  resources=yf.ResourceSpec(4, "16g")))
        assert "1c-1536m (slot 1c-1280m), 2c-2048m (slot 2c-1792m)" in str(refused.value)
        assert "session.container-sizes" in str(refused.value)
        assert [d.name for d in dispatcher.list_jobs()] == ["a", "b", "c"]

        # idle executors beyond --min-executors go; one stays warm
        wait_until(lambda: len(session.overview().workers) == 1, 30,
                   "idle executors beyond min-executors to be released")
        d = dispatcher.submit(job("d", tmp_path / "d", config, parallelism=1))
        assert dispatcher.wait(d, 120).status is JobStatus.FINISHED
        assert dict(session.overview().workers_started_per_spec) == started

    # the history outlives the session
    archive = JobArchive(history, JOB_DETAILS)
    assert archive.job_ids() == sorted([a, b, c, d])
    summary = archive.load(b)
    assert summary.status is JobStatus.FINISHED and summary.name == "b"
    # the history keeps each chained operator's figures
    assert summary.vertex_running("slow").name == "arrow-source -> slow -> parquet-sink"
    assert summary.operator_metrics("slow").records_in == TABLE.num_rows
    assert archive.load(a).status is JobStatus.CANCELED


def test_a_session_keeps_only_the_newest_ended_jobs_in_memory_and_reads_older_ones_back(
        tmp_path, config):
    config.set(options.SESSION_HISTORY_DIR, str(tmp_path / "history"))
    config.set(options.JOBSTORE_MAX_CAPACITY, 1)
    with LocalCluster(config, session=True) as session:
        dispatcher = session.dispatcher
        first = dispatcher.submit(job("first", tmp_path / "1", config, parallelism=1))
        assert dispatcher.wait(first, 120).status is JobStatus.FINISHED
        second = dispatcher.submit(job("second", tmp_path / "2", config, parallelism=1))
        assert dispatcher.wait(second, 120).status is JobStatus.FINISHED
        assert [d.name for d in dispatcher.list_jobs()] == ["second"]
        # the first one left memory but not the session: it comes back from the history
        older = wait_until(lambda: _details_or_none(dispatcher, first), 30,
                           "the first job's archive to be readable")
        assert older.name == "first" and older.status is JobStatus.FINISHED
        assert dispatcher.counts() == (0, 2)


def _details_or_none(dispatcher, job_id):
    try:
        return dispatcher.details(job_id)
    except KeyError:
        return None


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def test_a_long_session_stays_flat(tmp_path, config):
    """Each ended job gives back its JobMaster, main thread and ExecutionGraph: after
    200 jobs the session holds what it held after 20 (it held two threads a job)."""
    config.set(options.SESSION_HISTORY_DIR, str(tmp_path / "history"))
    small = pa.table({"x": pa.array(range(10), pa.int64())})
    seen = {}
    with LocalCluster(config, session=True, min_executors=1) as session:
        dispatcher = session.dispatcher
        for n in range(1, 201):
            p = yf.Pipeline(f"job-{n}", parallelism=1)
            p.from_arrow(small).write_parquet(str(tmp_path / "out" / str(n)))
            job_id = dispatcher.submit(p.job_graph(config))
            assert dispatcher.wait(job_id, 60).status is JobStatus.FINISHED
            if n in (20, 200):
                gc.collect()
                seen[n] = (threading.active_count(), _rss_mb())
        assert not session.components.jobs
        assert dispatcher.counts() == (0, 200)
        assert pq.read_table(tmp_path / "out" / "200").num_rows == small.num_rows
    (threads_20, rss_20), (threads_200, rss_200) = seen[20], seen[200]
    assert threads_200 <= threads_20 + 5, f"threads: {threads_20} after job 20, {threads_200} after 200"
    assert rss_200 <= rss_20 + 50, f"RSS: {rss_20:.0f} MB after job 20, {rss_200:.0f} MB after 200"


def test_a_new_attempt_runs_again_the_accepted_jobs_that_had_not_ended(tmp_path, config):
    """What a session's next ApplicationMaster attempt finds (issue 16, item 4): the
    job graph store holds a job the dead attempt accepted and one it saw end; the
    unended one runs again under its id, the ended one stays only in the history."""
    from yarnflow.appmaster.dispatcher import Dispatcher
    from yarnflow.appmaster.dispatcher.job_graph_store import (JobGraphStore,
                                                               job_graph_store_location)
    from yarnflow.core.details import JobDetails
    from yarnflow.rpc.codec import jobgraph_to_proto
    history = str(tmp_path / "history")
    store = JobGraphStore(job_graph_store_location(history, "application_1_0001"))
    assert store.location == str(tmp_path / "jobgraphs" / "application_1_0001")
    unended, ended = job("unended", tmp_path / "a", config), job("ended", tmp_path / "b", config)
    for graph in (unended, ended):     # what attempt 1's Dispatcher stored on acceptance
        store.put(graph.job_id, jobgraph_to_proto(graph).SerializeToString())
    archive = JobArchive(history, JOB_DETAILS)
    archive.store(JobDetails(ended.job_id, "ended", JobStatus.FINISHED, 1.0, 2.0))
    assert oct((tmp_path / "jobgraphs" / "application_1_0001").stat().st_mode)[-3:] == "700"

    with LocalCluster(config) as attempt_two:
        dispatcher = Dispatcher(attempt_two.components, None, archive, store)
        dispatcher.expect_recovery()              # before the attempt serves clients
        # a client asking meanwhile is answered once the job runs again, not told the
        # session has no such job (what a second attempt used to say in that moment)
        asked = ThreadPoolExecutor(1).submit(dispatcher.details, unended.job_id)
        with pytest.raises(FutureTimeout):
            asked.result(0.5)
        assert dispatcher.recover() == [unended.job_id]
        assert asked.result(30).job_id == unended.job_id
        assert dispatcher.wait(unended.job_id, 60).status is JobStatus.FINISHED
        wait_until(lambda: store.job_ids() == [], 30, "the archived job to leave the store")
    assert pq.read_table(tmp_path / "a").sort_by("x").equals(TABLE)
    assert not (tmp_path / "b").exists(), "the job that had ended ran again"
    assert archive.load(unended.job_id).status is JobStatus.FINISHED
    assert store.ended_job_ids() == sorted([unended.job_id, ended.job_id])

    with LocalCluster(config) as attempt_three:      # both ended: both listed, none run
        dispatcher = Dispatcher(attempt_three.components, None, archive, store)
        assert dispatcher.recover() == []
        assert {d.job_id: d.status for d in dispatcher.list_jobs()} == \
            {unended.job_id: JobStatus.FINISHED, ended.job_id: JobStatus.FINISHED}
        assert dispatcher.counts() == (0, 2)


class _HeldStore:
    """The session's job graph store (a real one, on the local disk) whose writes wait
    for the test: a slow cluster file system, or one that refuses."""

    def __init__(self, location: str, error: Exception | None = None) -> None:
        from yarnflow.appmaster.dispatcher.job_graph_store import JobGraphStore
        self.store = JobGraphStore(location)
        self.location = location
        self.release = threading.Event()
        self.writing = threading.Event()
        self.error = error

    def put(self, job_id, job_graph: bytes) -> None:
        self.writing.set()
        assert self.release.wait(HELD_S), "the test never let the write end"
        if self.error is not None:
            raise self.error
        self.store.put(job_id, job_graph)

    def __getattr__(self, name: str):
        return getattr(self.store, name)


def _submit_in_background(dispatcher, graph):
    from concurrent.futures import ThreadPoolExecutor
    from yarnflow.rpc.codec import jobgraph_to_proto
    pool = ThreadPoolExecutor(max_workers=1)
    submitted = pool.submit(dispatcher.submit, graph, jobgraph_to_proto(graph).SerializeToString())
    pool.shutdown(wait=False)
    return submitted


def test_a_job_runs_while_its_graph_is_written_and_is_acknowledged_and_committed_only_once_kept(
        tmp_path, config):
    """Issue 32, item 4: the write to the job graph store overlaps the job's start; the
    submission is acknowledged, and the output committed, only once the graph is kept."""
    from yarnflow.appmaster.dispatcher import Dispatcher
    config = Configuration.load(overrides=SESSION + HELD)
    store = _HeldStore(str(tmp_path / "jobgraphs" / "app"))
    graph = job("kept", tmp_path / "out", config, parallelism=1)
    with LocalCluster(config) as cluster:
        dispatcher = Dispatcher(cluster.components, None, None, store)
        submitted = _submit_in_background(dispatcher, graph)
        assert store.writing.wait(30), "the job graph store was never written"
        # the job runs to its end while the write is held: nothing is committed yet
        _wait_for_subtasks(cluster, graph.job_id, ExecutionState.FINISHED, 120)
        assert not submitted.done(), "acknowledged before the job graph was kept"
        assert not (tmp_path / "out").exists(), "output committed before the job was accepted"
        assert store.job_ids() == []
        store.release.set()
        assert submitted.result(30) == graph.job_id
        assert store.job_ids() == [graph.job_id]
        assert dispatcher.wait(graph.job_id, 60).status is JobStatus.FINISHED
    assert pq.read_table(tmp_path / "out").sort_by("x").equals(TABLE)


def test_a_job_whose_graph_cannot_be_kept_is_rejected_and_leaves_no_output(tmp_path, config):
    from yarnflow.appmaster.dispatcher import Dispatcher
    config = Configuration.load(overrides=SESSION + HELD)
    store = _HeldStore(str(tmp_path / "jobgraphs" / "app"),
                       error=PermissionError("Permission denied: user=etl, access=WRITE"))
    graph = job("refused", tmp_path / "out", config, parallelism=1)
    with LocalCluster(config) as cluster:
        dispatcher = Dispatcher(cluster.components, None, None, store)
        submitted = _submit_in_background(dispatcher, graph)
        _wait_for_subtasks(cluster, graph.job_id, ExecutionState.FINISHED, 120)
        store.release.set()
        with pytest.raises(JobRejected) as rejected:
            submitted.result(30)
        assert "could not keep job refused" in str(rejected.value)
        assert "Permission denied: user=etl" in str(rejected.value)
        ended = dispatcher.wait(graph.job_id, 60)
        assert ended.status in (JobStatus.CANCELED, JobStatus.FAILED), ended.status
        # it is not there, and no later attempt runs it
        assert store.job_ids() == [] and not (tmp_path / "out").exists()
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")], \
            "the rejected job's staged output was left behind"


def test_a_job_whose_graph_is_not_kept_in_time_is_rejected_naming_the_option(tmp_path):
    """session.job-graph-store.write-timeout itself: a write still held when it passes
    rejects the submission naming the option, the job ends cancelled without output,
    and the write that ends late leaves the store."""
    from yarnflow.appmaster.dispatcher import Dispatcher
    config = Configuration.load(overrides=SESSION + ["session.job-graph-store.write-timeout=1 s"])
    store = _HeldStore(str(tmp_path / "jobgraphs" / "app"))
    graph = job("late", tmp_path / "out", config, parallelism=1, gate=tmp_path / "never")
    with LocalCluster(config) as cluster:
        dispatcher = Dispatcher(cluster.components, None, None, store)
        submitted = _submit_in_background(dispatcher, graph)
        with pytest.raises(JobRejected) as rejected:
            submitted.result(60)
        assert "session.job-graph-store.write-timeout" in str(rejected.value)
        assert "within 1 s" in str(rejected.value)
        assert dispatcher.wait(graph.job_id, 60).status is JobStatus.CANCELED
        store.release.set()      # the write ends after all: the store does not keep it
        wait_until(lambda: store.job_ids() == [], 30, "the late write to leave the store")
    assert not (tmp_path / "out").exists()


def _subtasks_in(cluster, job_id, state: ExecutionState) -> bool:
    jm = cluster.components.jobs.get(job_id)
    if jm is None:
        return False
    details = jm.main.call(jm.details)
    return all(s.state is state for v in details.vertices for s in v.subtasks)


def _wait_for_subtasks(cluster, job_id, state: ExecutionState, timeout: float) -> None:
    """Wait for every subtask of the job to reach ``state``; a timeout says where each
    one is (its state, attempt and executor) and how the job stands, since CI keeps no
    logs."""
    def where() -> str:
        jm = cluster.components.jobs.get(job_id)
        if jm is None:
            return "no JobMaster for the job"
        details = jm.main.call(jm.details)
        subtasks = "; ".join(f"{v.name}[{s.index}] {s.state.value} attempt {s.attempt} "
                             f"on {s.resource_id or '-'}"
                             for v in details.vertices for s in v.subtasks)
        return (f"job {details.status.value}, {details.restarts} restarts, "
                f"exceptions {[e.cause for e in details.exceptions][-3:]}; {subtasks}")
    try:
        wait_until(lambda: _subtasks_in(cluster, job_id, state), timeout,
                   f"every subtask to be {state.value}")
    except AssertionError as err:
        raise AssertionError(f"{err}: {where()}") from None


def test_each_job_in_a_session_gets_its_own_batch_rows(tmp_path, config):
    """pipeline.batch-rows is the job's (Flink's pipeline.* options are job-level): a
    session's executors started with the session's 100 cut each job's source into the
    job's own batches."""
    def sizes(batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.append_column("n", pa.array([batch.num_rows] * batch.num_rows, pa.int64()))
    with LocalCluster(config, session=True, min_executors=1) as session:
        dispatcher = session.dispatcher
        for rows in (7, None):
            job_config = Configuration.load(overrides=[*SESSION, f"pipeline.batch-rows={rows}"]) \
                if rows else config
            p = yf.Pipeline(f"rows-{rows}", parallelism=1)
            p.from_arrow(TABLE).map(sizes, name="sizes").write_parquet(str(tmp_path / str(rows)))
            job_id = dispatcher.submit(p.job_graph(job_config))
            done = dispatcher.wait(job_id, 120)
            assert done.status is JobStatus.FINISHED, done.failure
            got = pq.read_table(tmp_path / str(rows))
            assert got.num_rows == TABLE.num_rows
            assert max(got.column("n").to_pylist()) == (rows or 100), rows
