"""The web monitor on ``local``, with real jobs: the REST API agrees with the job
details the CLI prints, Prometheus sees records grow while a job runs, a local session
lists running and ended jobs, `yarnflow run --ui` prints the page's URL, and a real
browser draws the page. Its YARN side (through the ResourceManager's proxy) is in
tests/yarn/test_web_ui.py."""
from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time
import urllib.request

import pyarrow as pa

import yarnflow.client as yf
from tests.conftest import FAST, ROOT, artifacts_dir, browse, wait_until
from tests.rest_contract import ENDPOINTS, EXECUTOR_FIELDS, SUBTASK_FIELDS, VERTEX_FIELDS, metric
from yarnflow.conf import Configuration
from yarnflow.core.status import JobStatus
from yarnflow.client.targets.local import LocalCluster

WEB = ["local.web-ui=true", "web.refresh-interval=0.5 s", "pipeline.batch-rows=10"]


def slow(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.15)         # the workload: each batch keeps the job running a while
    return batch


def pipeline(out: str, name: str = "watched", rows: int = 300, fn=slow) -> yf.Pipeline:
    p = yf.Pipeline(name, parallelism=2)
    p.from_arrow(pa.table({"k": [i % 7 for i in range(rows)], "x": list(range(rows))})) \
        .map(fn, name="work").key_by("k").map(lambda b: b, name="keyed").write_parquet(out)
    return p


# the two chains: the source and work, then keyed and the sink after the hash exchange
WORK, KEYED = "arrow-source -> work", "keyed -> parquet-sink"


def work_records_in(url: str) -> float:
    """What the work operator read, scraped: its chain's head is the source, whose task
    reads no input of its own."""
    return metric(url, "yarnflow_operator_records_in", WORK, operator="work")


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_the_rest_api_agrees_with_the_job_details_and_metrics_grow(tmp_path):
    config = Configuration.load(overrides=[*FAST, *WEB])
    with LocalCluster(config) as cluster:
        url = cluster.web.url
        graph = pipeline(str(tmp_path / "out")).job_graph(config)
        client = cluster.submit(graph)
        wait_until(lambda: work_records_in(url) > 0, 60, "the work operator's records in the metrics")
        first = work_records_in(url)
        running = get(url + f"jobs/{client.job_id}")
        assert running["state"] == "RUNNING"
        executors = get(url + "taskmanagers")["taskmanagers"]
        assert executors and all(e["container"]["memory_mb"] > 0 for e in executors)
        wait_until(lambda: work_records_in(url) > first, 60,
                   "the work operator's records growing between two scrapes")
        vid = graph.vertex_running("work").id
        for path, fields in ENDPOINTS.items():
            answer = get(url + path.format(jid=client.job_id, vid=vid))
            assert fields <= set(answer), (path, sorted(fields - set(answer)))
        assert all(EXECUTOR_FIELDS <= set(e) for e in executors)
        result = client.wait(120)
        assert result.status is JobStatus.FINISHED

        details = client.details()            # what `yarnflow status` and the summary print
        job = get(url + f"jobs/{client.job_id}")
        assert all(VERTEX_FIELDS <= set(v) for v in job["vertices"])
        assert (job["jid"], job["name"], job["state"]) == (details.job_id, details.name, "FINISHED")
        assert job["duration"] == round((details.end_time - details.start_time) * 1000)
        for rest, vertex in zip(job["vertices"], details.vertices, strict=True):
            metrics = [s.metrics for s in vertex.subtasks]
            assert (rest["id"], rest["name"], rest["parallelism"]) == \
                (vertex.id, vertex.name, vertex.parallelism)
            assert rest["metrics"]["read-records"] == sum(m.records_in for m in metrics)
            assert rest["metrics"]["write-records"] == sum(m.records_out for m in metrics)
            assert rest["metrics"]["read-bytes"] == sum(m.bytes_in for m in metrics)
            assert rest["tasks"]["FINISHED"] == vertex.parallelism
            subtasks = get(url + f"jobs/{client.job_id}/vertices/{vertex.id}")["subtasks"]
            assert all(SUBTASK_FIELDS <= set(s) for s in subtasks)
            assert [(s["taskmanager-id"], s["host"], s["attempt"]) for s in subtasks] == \
                [(s.resource_id, s.host, s.attempt) for s in vertex.subtasks]
        chain = next(v for v in job["vertices"] if v["name"] == WORK)["operators"]
        assert [(op["name"], op["metrics"]["read-records"], op["metrics"]["write-records"])
                for op in chain] == [("arrow-source", 0, 300), ("work", 300, 300)]

        nodes = get(url + f"jobs/{client.job_id}/plan")["plan"]["nodes"]
        assert [n["description"] for n in nodes] == [v.name for v in graph.topological_order()]
        keyed = next(n for n in nodes if n["description"] == KEYED)
        assert keyed["inputs"][0]["ship_strategy"] == "HASH" and keyed["inputs"][0]["keys"] == ["k"]
        assert nodes[0]["estimate"]["rows"] == 300      # the planner's, shipped with the graph
        assert get(url + "overview")["jobs-finished"] == 1
        assert get(url + f"jobs/{client.job_id}/exceptions")["root-exception"] is None
        config_keys = {e["key"] for e in get(url + "jobmanager/config")}
        assert "heartbeat.interval" in config_keys


def test_a_local_session_lists_its_running_and_ended_jobs(tmp_path):
    config = Configuration.load(overrides=[*FAST, *WEB])
    with LocalCluster(config, session=True) as session:
        url = session.web.url
        dispatcher = session.dispatcher
        ended = dispatcher.submit(pipeline(str(tmp_path / "a"), "first", 20,
                                           fn=lambda b: b).job_graph(config))
        dispatcher.wait(ended, 120)
        running = dispatcher.submit(pipeline(str(tmp_path / "b"), "second").job_graph(config))
        listed = wait_until(lambda: {j["jid"]: j["state"] for j in get(url + "jobs/overview")["jobs"]}
                            .get(running) == "RUNNING" and get(url + "jobs/overview"), 60,
                            "the second job RUNNING on the page")
        states = {j["name"]: j["state"] for j in listed["jobs"]}
        assert states == {"first": "FINISHED", "second": "RUNNING"}
        dispatcher.cancel(running)
        dispatcher.wait(running, 60)


def test_run_with_ui_prints_the_pages_url(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(
        "import pyarrow as pa, sys, yarnflow.client as yf\n"
        "p = yf.Pipeline('ui', parallelism=1)\n"
        "p.from_arrow(pa.table({'x': [1, 2, 3]})).write_parquet(sys.argv[1])\n"
        "p.execute()\n")
    proc = subprocess.run([sys.executable, "-m", "yarnflow.client.cli", "run", "--ui", "-D",
                           "heartbeat.interval=0.5 s", str(script), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^web UI: http://127\.0\.0\.1:\d+/$", proc.stdout, re.MULTILINE), proc.stdout


def test_a_browser_draws_the_running_jobs_dag_subtasks_and_executors(tmp_path, chromium):
    config = Configuration.load(overrides=[*FAST, *WEB])
    with LocalCluster(config) as cluster:
        client = cluster.submit(pipeline(str(tmp_path / "out"), rows=600).job_graph(config))
        wait_until(lambda: client.details().status is JobStatus.RUNNING and
                   get(cluster.web.url + "taskmanagers")["taskmanagers"], 60,
                   "the job RUNNING with its executors registered")
        page = f"{cluster.web.url}#/jobs/{client.job_id}"
        dom = browse(chromium, page, artifacts_dir() / "web-ui-local.png")
        client.cancel()
        client.wait(60)
    for vertex in (WORK, KEYED):
        assert f'data-vertex="{html.escape(vertex, quote=False)}"' in dom, dom[-3000:]
    assert re.search(r'class="vertex status-(RUNNING|DEPLOYING|FINISHED|SCHEDULED)', dom)
    assert "Executors and containers" in dom and "data-executor=" in dom
    assert "HASH(k)" in dom                           # the edge's ship strategy, drawn
    assert (artifacts_dir() / "web-ui-local.png").stat().st_size > 10_000


def test_a_browser_shows_a_sorts_ranges_with_their_keys_and_bytes(chromium):
    """The page's "Sort ranges" table, drawn from what the REST API serves of a finished
    sort (the fake's: a local job's page goes with its cluster)."""
    from tests.unit.fakes import TestingWebMonitorSource
    from tests.unit.test_webmonitor import sorted_job
    from yarnflow.appmaster.webmonitor import WebMonitorServer
    source = TestingWebMonitorSource()
    source.job_details["j2"] = sorted_job()
    source.plans["j2"] = [{"id": "v-sort", "name": "sort -> parquet-sink", "parallelism": 3,
                           "slot_sharing_group": "default", "uses_spark": False,
                           "subtask_profile": {"cpu": 1, "memory_mb": 1024, "gpus": 0},
                           "estimate": {"rows": None, "bytes": None, "from": ""}, "inputs": []}]
    server = WebMonitorServer(source).start()
    try:
        dom = browse(chromium, f"{server.url}#/jobs/j2")
    finally:
        server.stop()
    assert "Sort ranges" in dom, dom[-3000:]
    rows = re.findall(r'<tr data-range="sort -&gt; parquet-sink#(\d)">(.*?)</tr>', dom)
    assert [index for index, _ in rows] == ["0", "1", "2"], dom[-3000:]
    assert "<td>41</td><td>97</td>" in rows[1][1], rows[1][1]
    # it spilled more than it read: the page says so, and what to raise
    warning = re.search(r'data-spill-warning="sort -&gt; parquet-sink">(.*?)</p>', dom)
    assert warning and "taskmanager.memory.managed.fraction" in warning.group(1), dom[-3000:]
    assert "(3 files)" in dom


def test_a_browser_shows_a_streaming_jobs_checkpoints_and_event_time(chromium):
    """The page's "Checkpoints" section and "Event time" table, drawn from what the REST
    API serves of a streaming job (the fake's: two checkpoints completed, one failed)."""
    from tests.unit.fakes import TestingWebMonitorSource
    from tests.unit.test_webmonitor import streaming_job
    from yarnflow.appmaster.webmonitor import WebMonitorServer
    source = TestingWebMonitorSource()
    job = streaming_job()
    source.job_details["s1"] = job
    source.plans["s1"] = [{"id": v.id, "name": v.name, "parallelism": v.parallelism,
                           "slot_sharing_group": "default", "uses_spark": False,
                           "subtask_profile": {"cpu": 1, "memory_mb": 1024, "gpus": 0},
                           "estimate": {"rows": None, "bytes": None, "from": ""}, "inputs": []}
                          for v in job.vertices]
    server = WebMonitorServer(source).start()
    try:
        dom = browse(chromium, f"{server.url}#/jobs/s1")
    finally:
        server.stop()
    counts = re.search(r'data-checkpoint-counts="">(.*?)</p>', dom)
    assert counts and counts.group(1).startswith("2 completed · 1 failed"), dom[-3000:]
    assert "file:///chk/job/chk-3" in counts.group(1)
    rows = re.findall(r'<tr data-checkpoint="(\d)" data-status="(\w+)">(.*?)</tr>', dom)
    assert [(i, s) for i, s, _ in rows] == [("3", "COMPLETED"), ("2", "FAILED"), ("1", "COMPLETED")]
    assert "expired: not acknowledged within 60 s" in rows[1][2]
    marks = re.findall(r'<tr data-watermark="([^"]+)">(.*?)</tr>', dom)
    assert marks and "2023-11-14T22:13:20.000Z" in marks[0][1], dom[-3000:]
