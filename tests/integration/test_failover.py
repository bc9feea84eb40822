"""Failover on the local target (seed 003, FLIP-6's TaskManager crash): real
TaskExecutor processes killed, frozen and failing, and the output checked row by row
against pyarrow's."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import yarnflow.client as yf
from tests.conftest import FAST, executor_logs, wait_until
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.conf import Configuration
from yarnflow.core.details import JobDetails
from yarnflow.client.targets.local import LocalCluster

ROWS, BATCH_ROWS, KEYS = 16_000, 200, 97
# A map that takes its time, and notes each batch it finished in ``progress`` (the
# local target's executors share this machine's disk with the test): the test kills
# an executor once half the batches are through.
ROOT = Path(__file__).resolve().parents[2]
PAUSE_S = 1.0   # 20 batches per subtask: about 20 s of work
RESTART_FAST = ["restart-strategy.exponential-delay.initial-backoff=0.5 s",
                "restart-strategy.exponential-delay.jitter-factor=0"]


def table() -> pa.Table:
    return pa.table({"k": pa.array([i % KEYS for i in range(ROWS)], pa.int64()),
                     "v": pa.array(range(ROWS), pa.int64())})


def reference() -> pa.Table:
    return table().group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")


def slow_map(progress: Path, pause: float = PAUSE_S):
    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(pause)
        with open(progress, "a") as out:
            out.write(f"{os.getpid()} {batch.num_rows}\n")
        return batch
    return work


def rows_through(progress: Path, pid: int | None = None) -> int:
    """Rows the map noted, in all or in one executor process."""
    try:
        lines = [line.split() for line in progress.read_text().splitlines()]
    except FileNotFoundError:
        return 0
    return sum(int(rows) for who, rows in lines if pid is None or int(who) == pid)


def pipelined_job(out: Path, progress: Path, parallelism: int = 4) -> yf.Pipeline:
    """source -> map -> key_by -> aggregate -> Parquet sink, all exchanges pipelined."""
    p = yf.Pipeline("failover", parallelism=parallelism)
    p.from_arrow(table()).map(slow_map(progress), name="work") \
     .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(str(out))
    return p


def assert_exact(out: Path) -> None:
    got = pq.read_table(out).sort_by("k")
    want = reference()
    assert got.num_rows == want.num_rows, "a key is missing or repeated"
    assert got["v_sum"].to_pylist() == want["v_sum"].to_pylist()
    assert got["v_count"].to_pylist() == want["v_count"].to_pylist()


def executor_running(details: JobDetails, operator: str) -> str:
    return next(s.resource_id for s in details.vertex_running(operator).subtasks
                if s.resource_id)


def test_a_killed_executor_midway_restarts_the_job_and_the_output_is_exact(tmp_path):
    config = Configuration.load(overrides=FAST + RESTART_FAST + [
        f"pipeline.batch-rows={BATCH_ROWS}"])
    progress, out = tmp_path / "progress", tmp_path / "out"
    with LocalCluster(config) as cluster:
        client = cluster.submit(pipelined_job(out, progress).job_graph(config))
        wait_until(lambda: rows_through(progress) >= ROWS // 2, 120, "half the rows mapped")
        victim = executor_running(client.details(), "work")
        os.kill(cluster.driver.pid_of(victim), signal.SIGKILL)
        result = client.wait(180)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    assert_exact(out)
    details = result.details
    assert details.restarts == 1
    killed = [x for x in details.exceptions if x.resource_id == victim]
    assert killed and "SIGKILL" in killed[0].cause
    # Under load a consumer elsewhere can report its lost input before the executor's
    # loss is known and past the upstream grace: its entry is that echo, and says so.
    assert all(x.resource_id == victim or "UpstreamError: reading input" in x.cause
               for x in details.exceptions), details.exceptions
    assert {s.attempt for v in details.vertices for s in v.subtasks} == {1}, \
        "a pipelined job is one region: every subtask ran a second attempt"


def test_a_frozen_executor_is_caught_by_the_heartbeat_timeout_then_killed_and_reaped(tmp_path):
    config = Configuration.load(overrides=FAST + RESTART_FAST + [
        f"pipeline.batch-rows={BATCH_ROWS}"])
    progress, out = tmp_path / "progress", tmp_path / "out"
    with LocalCluster(config) as cluster:
        client = cluster.submit(pipelined_job(out, progress).job_graph(config))
        wait_until(lambda: rows_through(progress) >= ROWS // 2, 120, "half the rows mapped")
        victim = executor_running(client.details(), "work")
        pid = cluster.driver.pid_of(victim)
        frozen_at = time.time()
        os.kill(pid, signal.SIGSTOP)
        result = client.wait(180)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
        wait_until(lambda: not _alive(pid), 30, f"the frozen executor (pid {pid}) killed and reaped")
    assert_exact(out)
    details = result.details
    assert details.restarts == 1
    detected = details.exceptions[0]
    assert detected.resource_id == victim and "heartbeat.timeout" in detected.cause
    # this freeze's, not an earlier loss (how soon: the unit tier's, on a manual clock)
    assert detected.timestamp >= frozen_at


def _alive(pid: int) -> bool:
    """Running, stopped or a zombie not yet reaped by its parent."""
    return Path(f"/proc/{pid}").exists()


def stage(details: JobDetails, *operators: str) -> list:
    """The subtasks of the vertices that run these operators (a chain counted once)."""
    return [s for v in details.vertices if any(v.runs(o) for o in operators) for s in v.subtasks]


def two_stage_job(out: Path, progress_one: Path, progress_two: Path) -> yf.Pipeline:
    """Stage one (source -> map, 1 core) writes a BLOCKING shuffle that stage two
    (aggregate -> sink, 2 cores: executors of their own) reads."""
    p = yf.Pipeline("regions", parallelism=2)
    p.from_arrow(table()).slot_sharing_group("one") \
     .map(slow_map(progress_one, 0.0), name="one") \
     .resources(yf.ResourceSpec(1, "1g")).slot_sharing_group("one") \
     .key_by("k").blocking() \
     .map(slow_map(progress_two, PAUSE_S / 4), name="two").resources(yf.ResourceSpec(2, "1g")) \
     .slot_sharing_group("two") \
     .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(str(out))
    return p


def kill_in_stage_two(tmp_path: Path, *overrides: str, victim_vertex: str = "two") -> tuple:
    config = Configuration.load(overrides=FAST + RESTART_FAST + [
        f"pipeline.batch-rows={BATCH_ROWS}", *overrides])
    one, two, out = tmp_path / "one", tmp_path / "two", tmp_path / "out"
    with LocalCluster(config) as cluster:
        client = cluster.submit(two_stage_job(out, one, two).job_graph(config))
        wait_until(lambda: rows_through(two) >= ROWS // 4, 120, "stage two under way")
        details = client.details()
        assert all(s.state.name == "FINISHED" for s in stage(details, "arrow-source", "one"))
        victim = executor_running(details, victim_vertex)
        pid = cluster.driver.pid_of(victim)
        os.kill(pid, signal.SIGKILL)
        result = client.wait(180)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    assert_exact(out)
    return result.details, rows_through(one), rows_through(one, pid), victim


def test_region_failover_reruns_only_stage_two_and_full_failover_reruns_everything(tmp_path):
    details, rows_one, *_ = kill_in_stage_two(tmp_path / "region")
    assert rows_one == ROWS, "stage one read its input once: its results were reused"
    assert {s.attempt for s in stage(details, "arrow-source", "one")} == {0}
    assert {s.attempt for s in stage(details, "two")} == {1}
    assert details.restarts == 1

    details, rows_one, *_ = kill_in_stage_two(tmp_path / "full",
                                             "jobmanager.execution.failover-strategy=full")
    assert rows_one == 2 * ROWS
    assert {s.attempt for v in details.vertices for s in v.subtasks} == {1}


def test_losing_the_executor_that_holds_a_finished_result_reruns_its_producer(tmp_path):
    details, rows_one, rows_lost, victim = kill_in_stage_two(tmp_path, victim_vertex="one")
    rerun = [s for s in stage(details, "one") if s.attempt == 1]
    assert len(rerun) == 1, "only the lost result's producer ran again"
    assert rows_one == ROWS + rows_lost, "exactly the lost result's rows were read again"
    assert any(victim == x.resource_id or victim in x.cause for x in details.exceptions)


def test_a_rerun_producers_new_location_reaches_its_consumers_through_offloaded_parts(
        tmp_path, caplog):
    """Every shared deployment part offloaded (blob.offload.minsize: 1 byte): executors
    read the task information and shuffle descriptors from the file system, and the
    producer that ran again elsewhere is read at its new location."""
    store = tmp_path / "store"
    caplog.set_level(logging.INFO, "yarnflow.appmaster.jobmaster.scheduler.deployment_parts")
    details, rows_one, rows_lost, _ = kill_in_stage_two(
        tmp_path, "blob.offload.minsize=1", f"execution.batch.partition-store.dir={store}",
        victim_vertex="one")
    assert len([s for s in stage(details, "one") if s.attempt == 1]) == 1
    assert rows_one == ROWS + rows_lost
    offloaded = [r.getMessage() for r in caplog.records
                 if r.getMessage().startswith("offloaded a deployment part")]
    # each vertex's task information, the shuffle's descriptors, and new ones once the
    # lost producer ran again elsewhere
    assert len(offloaded) >= len(details.vertices) + 2, offloaded
    assert not any((store / "deployment-parts").iterdir()), "removed when the job ended"


def test_results_on_the_cluster_file_system_outlive_the_executor_that_wrote_them(tmp_path):
    """execution.batch.partition-store: dfs: consumers read the files, not the executor,
    so losing the executor that wrote a finished result costs nothing."""
    store = tmp_path / "store"
    details, rows_one, *_ = kill_in_stage_two(
        tmp_path, "execution.batch.partition-store=dfs",
        f"execution.batch.partition-store.dir={store}",
        "resourcemanager.taskmanager-timeout=600 s",    # not idle-released before the kill
        victim_vertex="one")
    assert rows_one == ROWS, "stage one ran once"
    assert {s.attempt for s in stage(details, "arrow-source", "one", "two")} == {0}
    assert details.restarts == 0
    assert not (store / details.job_id).exists(), "the job's stored results removed at its end"


HELD_ROW = 3 * BATCH_ROWS


def held_at_a_row(release: Path, held: Path):
    """A map that holds the batch with row ``HELD_ROW`` (in the first split, after three
    batches) until ``release`` exists, noting in ``held`` that it waits: the subtask
    that got that split runs on while the other, with every other split, finishes."""
    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        if HELD_ROW in batch.column("v").to_pylist():
            held.write_text("held")
            deadline = time.monotonic() + 120
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return batch
    return work


def test_a_restarted_region_of_a_stage_by_stage_union_runs_when_the_others_finished(tmp_path):
    """The union reads the source's chain twice (as is and through a filter that keeps
    nothing), subtask by subtask: two regions. One finishes while the other is held,
    then the held one's executor is killed: its region runs again, and its union with
    it (it waited forever, as the source's other subtask had finished)."""
    config = Configuration.load(overrides=FAST + RESTART_FAST + [
        f"pipeline.batch-rows={BATCH_ROWS}"])
    release, held, out = tmp_path / "release", tmp_path / "held", tmp_path / "out"
    p = yf.Pipeline("restart-union", parallelism=2, schedule_mode="LAZY_FROM_SOURCES")
    kept = p.from_arrow(table()).resources(yf.ResourceSpec(2, "1g")) \
        .map(held_at_a_row(release, held), name="held")
    kept.union(kept.filter(lambda b: pc.less(b["v"], -1))).write_parquet(str(out))
    with LocalCluster(config) as cluster:
        client = cluster.submit(p.job_graph(config))
        wait_until(held.exists, 120, f"the batch with row {HELD_ROW} held")
        wait_until(lambda: [s.state.name for s in stage(client.details(), "union")].count(
            "FINISHED") == 1, 120, "the other region finished")
        victim = next(s.resource_id for s in stage(client.details(), "held")
                      if s.state.name == "RUNNING")
        os.kill(cluster.driver.pid_of(victim), signal.SIGKILL)
        release.write_text("go")
        result = client.wait(180)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    got = pq.read_table(out).sort_by("v")
    assert got.column("v").to_pylist() == list(range(ROWS))
    assert got.column("k").to_pylist() == table().column("k").to_pylist()
    attempts = sorted(s.attempt for s in stage(result.details, "union"))
    assert attempts == [0, 1], "one region ran again, the other not"


def test_user_code_that_always_raises_fails_after_the_allowed_restarts(tmp_path):
    def explode(batch: pa.RecordBatch) -> pa.RecordBatch:
        raise ValueError("bad record 42")
    for strategy, restarts in ((["restart-strategy.type=fixed-delay",
                                 "restart-strategy.fixed-delay.attempts=2",
                                 "restart-strategy.fixed-delay.delay=0.2 s"], 2),
                               (["restart-strategy.type=none"], 0)):
        config = Configuration.load(overrides=FAST + strategy)
        p = yf.Pipeline("boom", parallelism=2)
        p.from_arrow(pa.table({"x": [1, 2, 3, 4]})).map(explode).write_parquet(
            str(tmp_path / f"o{restarts}"))
        with LocalCluster(config) as cluster:
            result = cluster.submit(p.job_graph(config)).wait(120)
        assert result.status is JobStatus.FAILED
        assert "ValueError: bad record 42" in result.failure
        assert f"the job ran {restarts + 1} attempt" in result.failure
        assert result.details.restarts == restarts
        assert not list(tmp_path.glob(f".o{restarts}.yarnflow-*")), "staging was cleaned up"


def test_an_executor_lost_while_idle_fails_nothing_and_is_not_replaced(tmp_path):
    config = Configuration.load(overrides=FAST + [
        "resourcemanager.taskmanager-timeout=120 s"])   # executors stay warm between jobs
    p = yf.Pipeline("first", parallelism=1)
    p.from_arrow(table()).write_parquet(str(tmp_path / "first"))
    with LocalCluster(config) as cluster:
        assert cluster.submit(p.job_graph(config)).wait(120).status is JobStatus.FINISHED
        idle = cluster.overview().workers[0].resource_id
        started = dict(cluster.overview().workers_started_per_spec)
        os.kill(cluster.driver.pid_of(idle), signal.SIGKILL)
        wait_until(lambda: not cluster.overview().workers, 30, "the lost executor dropped")
        overview = cluster.overview()
        assert overview.pending_workers == 0 and overview.workers_started_per_spec == started, \
            "an idle executor is not replaced"
        p = yf.Pipeline("second", parallelism=1)
        p.from_arrow(table()).write_parquet(str(tmp_path / "second"))
        result = cluster.submit(p.job_graph(config)).wait(120)
    assert result.status is JobStatus.FINISHED and result.details.restarts == 0


# --- the process holding the ResourceManager and JobMaster stalls -------------------------
FREEZE_S = 25.0     # less than heartbeat.timeout (50 s by default)
FREEZE_PAUSE_S = 0.5


def client_script(tmp_path: Path, out: Path, progress: Path) -> Path:
    """The pipelined job as a user's script, for ``yarnflow run``: on ``local`` the
    client process holds the ResourceManager and the JobMaster, and the test freezes it."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import os, time
        import pyarrow as pa
        import yarnflow.client as yf

        def work(batch):
            time.sleep({FREEZE_PAUSE_S})
            with open({str(progress)!r}, "a") as out:
                out.write(f"{{os.getpid()}} {{batch.num_rows}}\\n")
            return batch

        table = pa.table({{"k": pa.array([i % {KEYS} for i in range({ROWS})], pa.int64()),
                          "v": pa.array(range({ROWS}), pa.int64())}})
        p = yf.Pipeline("stall", parallelism=4)
        p.from_arrow(table).map(work, name="work") \\
         .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet({str(out)!r})
        p.execute()
    """))
    return script


def run_client(tmp_path: Path, name: str, freeze_when: Callable[[Path], bool]) -> None:
    """Run the job with ``yarnflow run`` (restarts off: a stall must fail nothing);
    freeze the client for FREEZE_S once ``freeze_when(progress)`` holds. The output is
    checked exact."""
    home = tmp_path / name
    home.mkdir()
    out, progress = home / "out", home / "progress"
    command = [sys.executable, "-m", "yarnflow.client.cli", "run", "-D", f"pipeline.batch-rows={BATCH_ROWS}",
               "-D", "restart-strategy.type=none", str(client_script(home, out, progress))]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT, env=dict(os.environ, YARNFLOW_HOME=str(home)))
    try:
        wait_until(lambda: freeze_when(progress) or proc.poll() is not None, 180,
                   f"the moment to freeze the client ({name})")
        assert proc.poll() is None, proc.communicate()[0]
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(FREEZE_S)        # the fault itself, not a wait for anything
        os.kill(proc.pid, signal.SIGCONT)
        output, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, output + executor_logs(home / "local-logs")
    assert "FINISHED" in output and "restart" not in output, output
    assert_exact(out)


def test_a_client_frozen_shorter_than_the_heartbeat_timeout_fails_nothing(tmp_path):
    """FLIP-6 reconciliation: reports sent while the ApplicationMaster (on ``local``, the
    client) stalls reach it when it runs again; nothing is failed or blamed on a
    partition, midway or as the tasks finish. Restarts are off, so anything failed
    would fail the job; run_client checks it FINISHED exact with no restart."""
    run_client(tmp_path, "midway", lambda p: rows_through(p) >= ROWS // 2)
    run_client(tmp_path, "at-end", lambda p: rows_through(p) >= ROWS)
