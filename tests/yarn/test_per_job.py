"""yarn-per-job end to end, on a real Hadoop 3.5 cluster (tests/yarn/conftest.py)."""
from __future__ import annotations

import getpass
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import wait_until
from yarnflow.core.status import ExecutionState
from yarnflow.client.targets.yarn_apps import YarnApplication
from tests.yarn.conftest import (FAST, PIPELINES, kill_and_watch_replacement, load_example,
                                 submitted_app_id, unique_app_name, yarnflow)

SHAPES = str(PIPELINES / "shapes.py")
SMALL_BATCHES = ["-D", "pipeline.batch-rows=250"]   # several batches, so rebalance feeds all
pytestmark = pytest.mark.usefixtures("yarn_cluster")


def test_main_example_per_job_returns_at_once_and_succeeds(yarn_cluster, hdfs):
    """Seed 003's job with its inputs and output on HDFS, whose blocks live on the
    NodeManagers' hosts; nothing exists at the local paths of the same names."""
    base = hdfs.scratch("example")
    data, out = f"{base}/data", f"{base}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, "examples/skewed_join.py", "--",
                    "--rows", "30000", "--data", data, "--out", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    # the client has exited; the application is still going
    assert yarn_cluster.app(app_id)["state"] in ("ACCEPTED", "RUNNING", "SUBMITTED")
    app = yarn_cluster.wait_finished(app_id)
    assert app["finalStatus"] == "SUCCEEDED", app["diagnostics"]
    got = hdfs.read_table(out).sort_by("InstrumentId")
    want = load_example().reference(data).sort_by("InstrumentId")
    assert got.num_rows == 30000
    assert got.equals(want.select(got.column_names))
    assert hdfs.leftovers(out) == []
    assert not os.path.exists(urlsplit(base).path), "something was written to the local path"


def sorted_digest(rows: int) -> str:
    """What shapes.py's collect shape prints for rows it sorted right."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("shapes", SHAPES)
    shapes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shapes)
    want = shapes.keyed(rows).sort_by([("k", "ascending"), ("v", "descending")])
    return f"collected {rows} rows, sha256 {shapes.digest(want)}"


def test_collect_brings_the_sorted_rows_back_and_refuses_a_result_over_its_limit(yarn_cluster,
                                                                                 hdfs):
    """``to_arrow()`` per job without --attach: the client follows the job all the same,
    fetches the rows from the ApplicationMaster (which waits for it), and they are
    every row in sorted order. With a limit below the result the job fails in one line
    naming the option, and the application ends FAILED."""
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *SMALL_BATCHES, SHAPES, "--",
                    "collect", "--rows", "6000", "--parallelism", "3", timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted_digest(6000) in proc.stdout
    app_id = submitted_app_id(proc)
    app = yarn_cluster.wait_finished(app_id)
    assert app["finalStatus"] == "SUCCEEDED", app["diagnostics"]
    small = yarnflow("run", "-t", "yarn-per-job", *FAST, *SMALL_BATCHES,
                     "-D", "pipeline.collect.max-result-size=4kb", SHAPES, "--",
                     "collect", "--rows", "6000", "--parallelism", "3", timeout=400)
    assert small.returncode != 0
    assert "over pipeline.collect.max-result-size (4.0 KB)" in small.stdout + small.stderr
    assert "Traceback" not in small.stdout + small.stderr
    assert yarn_cluster.wait_finished(submitted_app_id(small))["finalStatus"] == "FAILED"


def container_sizes(yarn_cluster, app_id: str, executors: int) -> tuple[tuple, list[tuple]]:
    """(MB, vcores) of the ApplicationMaster's container and, sorted, of the first
    ``executors`` TaskExecutor containers YARN lists for the application."""
    seen: dict[str, tuple[int, int]] = {}

    def all_seen() -> bool:
        if yarn_cluster.app(app_id)["state"] in ("FINISHED", "FAILED", "KILLED"):
            raise AssertionError(f"{app_id} ended before its containers were seen: {seen}")
        for c in yarn_cluster.running_containers(app_id):
            seen[c["containerId"]] = (c["allocatedMB"], c["allocatedVCores"])
        return len(seen) >= executors + 1
    wait_until(all_seen, 120, f"the application's {executors + 1} containers", interval=0.3)
    am = min(seen)                   # container ..._000001 is the ApplicationMaster's
    return seen[am], sorted(size for cid, size in seen.items() if cid != am)


def test_two_profiles_get_containers_of_exactly_those_sizes(yarn_cluster, hdfs):
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, SHAPES, "--", "two-profiles",
                    "--work", "5", "--out", f"{hdfs.scratch('out')}/out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    am, executors = container_sizes(yarn_cluster, app_id, 4)
    # slot profile + the TaskExecutor's 256 MB; vcores rounded up to whole cores
    assert executors == [(768, 1), (768, 1), (1792, 2), (1792, 2)]
    assert am == (1024, 1)
    assert yarn_cluster.wait_finished(app_id)["finalStatus"] == "SUCCEEDED"


def test_each_shared_slot_gets_a_container_of_its_own_size(yarn_cluster, hdfs):
    """Issue 15, item 4: a source of parallelism 2 (1 core, 1 GB) shares slots with a map
    of parallelism 1 (2 cores, 2 GB): one 3c/3g slot and one 1c/1g slot, so YARN grants
    one container of each size (slot + the TaskExecutor's 256 MB), not two 3c/3g ones."""
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, SHAPES, "--", "narrow-heavy",
                    "--work", "3", "--out", f"{hdfs.scratch('out')}/out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    _, executors = container_sizes(yarn_cluster, app_id, 2)
    assert executors == [(1280, 1), (3328, 3)]
    assert yarn_cluster.wait_finished(app_id)["finalStatus"] == "SUCCEEDED"


def test_executors_pack_only_the_slots_each_profile_uses_at_once(yarn_cluster, hdfs):
    """Issue 32, item 6: with taskmanager.numberOfTaskSlots 4, a profile used 4-wide gets
    one 4-slot executor and a profile used 2-wide one 2-slot executor, not 4 slots of
    which 2 are never used (slots + the TaskExecutor's 256 MB, vcores one per slot)."""
    out = f"{hdfs.scratch('out')}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, "-D", "taskmanager.numberOfTaskSlots=4",
                    SHAPES, "--", "four-and-two", "--work", "3", "--out", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    _, executors = container_sizes(yarn_cluster, app_id, 2)
    assert executors == [(1792, 2), (2304, 4)]
    assert yarn_cluster.wait_finished(app_id)["finalStatus"] == "SUCCEEDED"
    assert hdfs.read_table(out).num_rows == 2000


def test_idle_first_stage_containers_are_released_after_the_timeout(yarn_cluster, hdfs):
    """LAZY_FROM_SOURCES: stage 2 runs on executors of its own profile; stage 1's
    container goes back to YARN, as YARN itself sees it, while stage 2 still works
    (how soon, slot.idle.timeout + taskmanager-timeout, is the unit tier's, on a
    manual clock)."""
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, SHAPES, "--", "lazy", "--work", "25",
                    "--out", f"{hdfs.scratch('out')}/out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    with YarnApplication(app_id, timeout=30) as app:
        def stage1_finished():
            details = app.job_details()
            if details is None:
                return None
            source = details.vertex_running("arrow-source")
            return all(s.state == ExecutionState.FINISHED for s in source.subtasks)
        wait_until(stage1_finished, 120, "stage 1 to finish", interval=0.2)
        stage1 = next(c["containerId"] for c in yarn_cluster.running_containers(app_id)
                      if c["allocatedMB"] == 768)       # 512 MB slot + 256 MB
        wait_until(lambda: stage1 not in {c["containerId"] for c in
                                          yarn_cluster.running_containers(app_id)},
                   60, f"YARN to see {stage1} released", interval=0.2)
        stage2_running = [c for c in yarn_cluster.running_containers(app_id)
                          if c["allocatedMB"] == 1024]  # 768 MB slot + 256 MB: still working
        assert stage2_running, "stage 2's executor went away with stage 1's"
        details = app.job_details()
        assert details is not None and details.status.name == "RUNNING", \
            "stage 1's container was released only when the job ended"
    assert yarn_cluster.wait_finished(app_id)["finalStatus"] == "SUCCEEDED"


def _subtasks_running(app: "YarnApplication", operator: str, count: int) -> bool:
    """Whether ``count`` subtasks of the vertex running ``operator`` (alone or chained) run."""
    details = app.job_details()
    if details is None:
        return False
    subtasks = details.vertex_running(operator).subtasks
    return sum(s.state == ExecutionState.RUNNING for s in subtasks) == count


def test_without_restarts_a_container_killed_from_outside_fails_the_job_with_its_cause(
        yarn_cluster, hdfs):
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *SMALL_BATCHES,
                    "-D", "restart-strategy.type=none", SHAPES, "--", "long",
                    "--work", "60", "--out", f"{hdfs.scratch('out')}/out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    with YarnApplication(app_id, timeout=30) as app:
        wait_until(lambda: _subtasks_running(app, "work", 2), 120, "both subtasks to run",
                   interval=0.5)
    victims = yarn_cluster.executor_containers(app_id)
    assert len(victims) == 2, victims
    container_id = victims[0]
    yarn_cluster.kill_container(container_id)
    app = yarn_cluster.wait_finished(app_id, timeout=120)
    # the ApplicationMaster survived and ended the application with the job's failure
    assert app["finalStatus"] == "FAILED"
    assert app["diagnostics"].startswith("yarnflow job"), app["diagnostics"]
    assert f"YARN container {container_id}" in app["diagnostics"]
    assert "ended FAILED" in app["diagnostics"]
    logs = yarnflow("logs", app_id, timeout=120).stdout
    assert f"TaskExecutor container lost: YARN container {container_id}" in logs


def _rows_into_sink(app: "YarnApplication") -> int:
    """Rows the "work" operators handed to the sink chained after them so far (their
    metrics ride on the executors' heartbeats)."""
    details = app.job_details()
    if details is None:
        return 0
    chain = details.vertex_running("work")
    assert chain.operators == ["work", "parquet-sink"], chain.name     # one chained task
    return details.operator_metrics("parquet-sink").records_in


def test_a_container_killed_midway_is_replaced_and_the_job_succeeds_exactly(yarn_cluster, hdfs):
    """FLIP-6's TaskManager crash on YARN: the driver hears of the completed container,
    the pipelined region restarts on a replacement of the same size, and the output
    is exact; nothing of the application is left once it ends."""
    out = f"{hdfs.scratch('failover')}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *SMALL_BATCHES,
                    "-D", "restart-strategy.type=fixed-delay",
                    "-D", "restart-strategy.fixed-delay.delay=1 s", SHAPES, "--", "long",
                    "--work", "3", "--out", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    with YarnApplication(app_id, timeout=30) as app:
        wait_until(lambda: _subtasks_running(app, "work", 2) and _rows_into_sink(app) > 0, 120,
                   "both chained work subtasks running and rows into the sink", interval=0.3)
    killed = yarn_cluster.executor_containers(app_id)[0]
    killed_size, new_size = kill_and_watch_replacement(yarn_cluster, app_id, killed)
    assert new_size == killed_size, f"{killed} was {killed_size}, its replacement {new_size}"
    final = yarn_cluster.wait_finished(app_id)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    table = hdfs.read_table(out)
    assert sorted(table.column("k").to_pylist()) == list(range(2000)), "rows missing or repeated"
    assert table.column("v").to_pylist() == [1.0] * 2000
    status = yarnflow("status", app_id, timeout=120)     # from the job's archive
    assert status.returncode == 0 and "1 restart" in status.stdout, status.stdout + status.stderr
    with YarnApplication(app_id, timeout=30) as ended:
        details = ended.status().details
    assert details is not None and details.restarts == 1
    # one failure: every subtask lost with the container, each named with its cause
    assert details.exceptions and all(killed in x.cause for x in details.exceptions), \
        details.exceptions
    wait_until(lambda: not yarn_cluster.running_containers(app_id)
               and not yarn_cluster.node_containers(app_id), 60,
               f"no container of {app_id} left", interval=0.5)


@pytest.mark.parametrize("memory,needle", [
    ("8000m", "yarn.scheduler.maximum-allocation-mb=8192"),   # container with overhead too big
    ("20g", "more than the largest container allowed"),       # the profile alone is too big
])
def test_profile_beyond_yarn_maximum_is_refused_before_submission(yarn_cluster, hdfs,
                                                                   memory, needle):
    named, name = unique_app_name("refused-huge")
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *named, SHAPES, "--", "huge", "--memory", memory,
                    "--out", f"{hdfs.scratch('out')}/out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "huge-op" in proc.stdout and needle in proc.stdout, proc.stdout
    assert "Fix:" in proc.stdout
    assert not yarn_cluster.apps_named(name), "an application was submitted anyway"


def test_a_missing_column_is_refused_before_any_application_is_submitted(yarn_cluster, hdfs):
    named, name = unique_app_name("refused-column")
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *named, SHAPES, "--", "bad-column",
                    "--out", f"{hdfs.scratch('out')}/out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "vertex 'aggregate': its input has no column 'value' (it has: k, v)" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not yarn_cluster.apps_named(name), "an application was submitted anyway"


def test_user_code_raising_fails_the_application_and_status_shows_it(yarn_cluster, hdfs):
    out = f"{hdfs.scratch('raise')}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", "--attach", "--no-progress", *FAST,
                    "-D", "restart-strategy.type=fixed-delay",
                    "-D", "restart-strategy.fixed-delay.attempts=1",
                    "-D", "restart-strategy.fixed-delay.delay=0.5 s", SHAPES,
                    "--", "raise", "--out", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    app = yarn_cluster.app(app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "FAILED")
    status = yarnflow("status", app_id)
    assert status.returncode == 0, status.stderr
    assert "FAILED" in status.stdout
    assert re.search(r"ValueError: bad input: \d+ rows of which none is valid", status.stdout)
    assert "explode" in status.stdout            # the traceback names the user's function
    # the user's own frame: their file, the line of the raise, its source (shipped with
    # the job: the executor's host never had the file)
    raise_line = next(n for n, line in enumerate(Path(SHAPES).read_text().splitlines(), 1)
                      if "raise ValueError(f\"bad input" in line)
    with YarnApplication(app_id, timeout=30) as finished:
        details = finished.status().details
    assert details is not None
    for text in (details.failure, details.exceptions[-1].cause):
        assert f'File "{SHAPES}", line {raise_line}, in explode' in text, text
        assert 'raise ValueError(f"bad input:' in text, text
    assert "1 restart" in status.stdout and "the job ran 2 attempts" in status.stdout
    assert not hdfs.fs.exists(out) and hdfs.leftovers(out) == []
    assert yarn_cluster.app(app_id)["state"] == "FINISHED"      # nothing left running
    staging = f"{hdfs.default_fs}/user/{getpass.getuser()}/.skein/{app_id}"   # Skein's
    wait_until(lambda: not hdfs.fs.exists(staging), 60, f"{staging} to be removed")


def test_cancel_ends_the_application_killed(yarn_cluster, hdfs):
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *SMALL_BATCHES, SHAPES, "--", "long",
                    "--work", "60", "--out", f"{hdfs.scratch('out')}/out")
    app_id = submitted_app_id(proc)
    with YarnApplication(app_id, timeout=30) as app:
        wait_until(lambda: _subtasks_running(app, "work", 2), 120, "the job to be running",
                   interval=0.5)
    cancelled = yarnflow("cancel", app_id)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    app = yarn_cluster.wait_finished(app_id, timeout=60)
    assert app["finalStatus"] == "KILLED", app["diagnostics"]
