"""Data on the cluster's file system, end to end on the real Hadoop 3.5 cluster: inputs
and outputs on HDFS (whose blocks live on the same three hosts as the NodeManagers)
and an output commit that never shows a partial or mixed result. Splits read on the
hosts that store them: test_locality.py."""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

from tests.conftest import wait_until
from tests.yarn.conftest import FAST, PIPELINES, submitted_app_id, unique_app_name, yarnflow
from yarnflow.core.status import ExecutionState
from yarnflow.client.targets.yarn_apps import YarnApplication

SHAPES = str(PIPELINES / "shapes.py")
pytestmark = pytest.mark.usefixtures("yarn_cluster")


def numbers(start: int, count: int) -> pa.Table:
    rng = np.random.default_rng(start)
    return pa.table({"k": pa.array(np.arange(start, start + count), pa.int64()),
                     "noise": pa.array(rng.integers(0, 2**62, count), pa.int64())})


def sink_is_writing(app: YarnApplication, hdfs, out: str) -> bool:
    """A sink subtask runs, has rows in its writer (its executor's heartbeat said so),
    and the job's staging directory is there beside the target. A part file is
    created on HDFS with its first buffer (or at its end): a small one is not seen
    while it is written."""
    details = app.job_details()
    if details is None:
        return False
    sink = details.vertex_running("parquet-sink")     # chained to the "long" shape's work
    assert sink.operators == ["work", "parquet-sink"], sink.name
    return any(s.state == ExecutionState.RUNNING and any(
        op.name == "parquet-sink" and op.records_in > 0 for op in s.metrics.operators)
        for s in sink.subtasks) and any("-staging-" in n for n in hdfs.leftovers(out))


def overwrite_while_sink_writes(hdfs, name: str, *options: str) -> tuple[str, pa.Table, str]:
    """An old output at a target, and a running job replacing it, whose sink is writing:
    (target, old output, application id). The job has 100 batches of 1 s per subtask:
    on a loaded machine a cancel took longer than the few seconds a job of 2000 rows
    had left, which then committed before it was cancelled."""
    out = f"{hdfs.scratch(name)}/out"
    old = numbers(0, 1000)
    hdfs.write_table(old, f"{out}/part-00000.parquet")
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, "-D", "pipeline.batch-rows=100", *options,
                    SHAPES,
                    "--", "long", "--work", "1", "--rows", "20000", "--out", out, "--mode", "overwrite")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    with YarnApplication(app_id, timeout=30) as app:
        wait_until(lambda: sink_is_writing(app, hdfs, out), 120, "the sink to be writing",
                   interval=0.3)
    return out, old, app_id


def test_a_cancelled_job_leaves_the_target_as_it_was(yarn_cluster, hdfs):
    out, old, app_id = overwrite_while_sink_writes(hdfs, "cancel")
    cancelled = yarnflow("cancel", app_id)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert yarn_cluster.wait_finished(app_id, timeout=90)["finalStatus"] == "KILLED"
    assert hdfs.read_table(out).equals(old)
    assert hdfs.leftovers(out) == []


def test_a_killed_appmaster_leaves_the_target_and_the_next_run_clears_its_staging(
        yarn_cluster, hdfs):
    # one attempt: the crash ends the application (test_am_recovery covers a second)
    out, old, app_id = overwrite_while_sink_writes(hdfs, "am-kill", "-D",
                                                   "yarn.application-attempts=1")
    yarn_cluster.kill_appmaster(app_id)
    assert yarn_cluster.wait_finished(app_id, timeout=120)["finalStatus"] == "FAILED"
    assert hdfs.read_table(out).equals(old)
    assert hdfs.leftovers(out), "the killed job's staging directory (the crash's leftover)"

    rerun = yarnflow("run", "-t", "yarn-per-job", "--attach", *FAST, SHAPES, "--", "long",
                     "--work", "0", "--out", out, "--mode", "overwrite", timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert sorted(hdfs.read_table(out).column("k").to_pylist()) == list(range(2000))
    assert hdfs.leftovers(out) == []


def test_the_default_refuses_an_existing_output_and_overwrite_replaces_it_atomically(
        yarn_cluster, hdfs):
    base = hdfs.scratch("overwrite")
    out = f"{base}/out"
    old = pa.concat_tables([numbers(10_000 + 1000 * i, 1000) for i in range(3)])
    for i in range(3):                 # three old parts; the new output has two
        hdfs.write_table(numbers(10_000 + 1000 * i, 1000), f"{out}/part-{i:05d}.parquet")
    named, name = unique_app_name("refused-existing")
    refused = yarnflow("run", "-t", "yarn-per-job", *FAST, *named, SHAPES, "--", "long", "--work", "0",
                       "--out", out, "--mode", "errorifexists")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "already exists" in refused.stdout and "mode='overwrite'" in refused.stdout
    assert not yarn_cluster.apps_named(name), "an application was submitted"

    # A reader reads the target over and over while the job runs and commits: each read
    # is the old output or the new one, never a mix and never partial.
    seen: list[str] = []
    stop = threading.Event()

    def read_target() -> None:
        while not stop.is_set() and len(seen) < 2000:
            try:
                keys = sorted(hdfs.read_table(out).column("k").to_pylist())
            except (OSError, ValueError):      # the instant between the two renames
                seen.append("absent")
                continue
            seen.append("old" if keys == sorted(old.column("k").to_pylist()) else
                        "new" if keys == list(range(2000)) else f"mixed ({len(keys)} rows)")
    reader = threading.Thread(target=read_target, daemon=True)
    reader.start()
    try:
        proc = yarnflow("run", "-t", "yarn-per-job", "--attach", *FAST, SHAPES, "--", "long",
                        "--work", "0", "--out", out, "--mode", "overwrite", timeout=300)
    finally:
        stop.set()
        reader.join(60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(hdfs.read_table(out).column("k").to_pylist()) == list(range(2000))
    assert "old" in seen and not [s for s in seen if s.startswith("mixed")], seen
    assert hdfs.leftovers(out) == []


def test_a_local_input_is_refused_on_yarn_before_submission(yarn_cluster, hdfs, tmp_path):
    local = tmp_path / "input"
    local.mkdir()
    numbers(0, 10).to_pandas().to_parquet(local / "a.parquet")
    named, name = unique_app_name("refused-local")
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, *named, SHAPES, "--", "copy", "--input",
                    f"file://{local}", "--out", f"{hdfs.scratch('refused')}/out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = " ".join(proc.stdout.split())
    assert f"input file://{local} is a local path" in message
    assert "yarnflow fs put" in message and "fs.allow-local-paths: true" in message
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not yarn_cluster.apps_named(name), "an application was submitted"


def test_yarnflow_fs_puts_lists_and_removes_on_the_clusters_hdfs(yarn_cluster, hdfs, tmp_path):
    local = tmp_path / "tree"
    (local / "sub").mkdir(parents=True)
    numbers(0, 10).to_pandas().to_parquet(local / "a.parquet")
    (local / "sub" / "b.txt").write_text("b")
    target = f"{hdfs.scratch('fs-cli')}/tree"
    put = yarnflow("fs", "put", str(local), target)
    assert put.returncode == 0 and put.stdout.strip() == target, put.stdout + put.stderr
    assert hdfs.read_table(f"{target}/a.parquet").equals(numbers(0, 10))
    listing = yarnflow("fs", "ls", target).stdout.splitlines()
    assert [line.split()[-1] for line in listing] == [f"{target}/a.parquet", f"{target}/sub/"]
    again = yarnflow("fs", "put", str(local), target)
    assert again.returncode == 1 and "exists. Fix:" in again.stdout, again.stdout
    assert "Traceback" not in again.stdout + again.stderr
    removed = yarnflow("fs", "rm", target)
    assert removed.returncode == 0 and not hdfs.fs.exists(target)
    missing = yarnflow("fs", "ls", target)
    assert missing.returncode == 1 and f"{target} does not exist" in missing.stdout
    # into parents that do not exist yet, failing half-way (a file it cannot read, after
    # two it wrote): one line, and nothing left, not even the parents it made
    (local / "z-broken.parquet").symlink_to(tmp_path / "gone")
    deep = f"{hdfs.scratch('fs-cli-fail')}/new/parents/tree"
    failed = yarnflow("fs", "put", str(local), deep)
    output = failed.stdout + failed.stderr
    assert failed.returncode == 1 and "cannot read" in output and "nothing was left" in output
    assert len(output.strip().splitlines()) == 1 and "Traceback" not in output, output
    assert not hdfs.fs.exists(deep.rsplit("/", 3)[0] + "/new")


def test_webhdfs_writes_whole_files_in_any_size_and_renames_strictly(hdfs):
    """What the output commit and the job history rely on, on the real HDFS: a file
    that fits one write buffer (created with its bytes), an empty one, one of several
    buffers; no file in a missing directory; a rename that never replaces a file or
    moves into a directory, and names what is missing; listing and deleting as the
    base file system does."""
    from yarnflow.core.fs import webhdfs
    base = hdfs.scratch("webhdfs")
    fs = hdfs.fs
    big = np.random.default_rng(1).bytes(2 * webhdfs.WRITE_BUFFER + 123)
    for name, data in [("small", b"hello"), ("empty", b""), ("big", big)]:
        with fs.open_output(f"{base}/{name}") as out:
            out.write(data)
        with fs.open_input_stream(f"{base}/{name}") as back:
            assert back.read() == data, name
    with pytest.raises(FileNotFoundError, match="directory does not exist"):
        with fs.open_output(f"{base}/missing/x") as out:
            out.write(b"x")
    assert not fs.exists(f"{base}/missing")
    fs.mkdirs(f"{base}/dir")
    for taken in ("empty", "dir"):
        with pytest.raises(FileExistsError):
            fs.rename(f"{base}/small", f"{base}/{taken}")
    with pytest.raises(FileNotFoundError):
        fs.rename(f"{base}/gone", f"{base}/new")
    fs.rename(f"{base}/small", f"{base}/new")
    assert fs.list_dir(base) == ["big", "dir", "empty", "new"]
    assert fs.list_dir(f"{base}/dir") == []
    # listing and deleting, one request each
    assert fs.list_dir(f"{base}/missing") == []
    with pytest.raises(NotADirectoryError):
        fs.list_dir(f"{base}/new")
    with fs.open_output(f"{base}/dir/inside") as out:
        out.write(b"x")
    fs.delete(f"{base}/dir")          # with what is in it
    fs.delete(f"{base}/gone")         # nothing there: nothing to do
    fs.delete(f"{base}/new")
    assert fs.list_dir(base) == ["big", "empty"]
