"""The web UI of a per-job application on the real Hadoop 3.5 cluster, reached as a user
reaches it: the application's tracking URL through the ResourceManager's web proxy.
A real browser (Debian's headless Chromium) draws the page; the REST API behind it
agrees with YARN and with the job details the CLI shows; nothing secret is served.
The session's page is tested in test_session.py, against its long-running session."""
from __future__ import annotations

import html
import json
import urllib.request

import pytest

from tests.conftest import artifacts_dir, browse, wait_until
from tests.rest_contract import (ENDPOINTS, EXECUTOR_FIELDS, SUBTASK_FIELDS, VERTEX_FIELDS,
                                 metric)
from tests.yarn.conftest import FAST, PIPELINES, submitted_app_id, yarnflow
from yarnflow.core.contract import WEB_PAGE_ROUTE, web_page_url
from yarnflow.client.targets.yarn_apps import YarnApplication
from yarnflow.client.targets.yarn_client import skein_client

SHAPES = str(PIPELINES / "shapes.py")
WORK = "work -> parquet-sink"       # the "long" shape's map, chained to its sink
pytestmark = pytest.mark.usefixtures("yarn_cluster")


def get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=15) as response:
        return json.loads(response.read())


def status_rows(app_id: str) -> dict[str, list[str]]:
    """`yarnflow status`'s live table, vertex -> its cells: parallelism, deploying,
    running, finished, failed, canceled, records in, records out, progress; a chain's
    operators follow its row, each with its records and progress."""
    proc = yarnflow("status", app_id)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 10 and cells[-1].endswith("%"):
            rows.setdefault(cells[0], cells)
    assert rows, proc.stdout
    return rows


def raw(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=15) as response:
        return response.read()


def test_the_tracking_url_leads_to_the_live_page_of_a_per_job_application(yarn_cluster, hdfs,
                                                                           chromium):
    scratch = hdfs.scratch('web-ui')
    out = f"{scratch}/out"
    # the job works 0.3 s a batch (1,000 batches a work subtask, at most 5 minutes) until
    # the test, done looking at it while it runs, removes the hold file; heartbeats too
    # seldom to carry live counts
    hold = hdfs.hold_file(f"{scratch}/hold")
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, "-D", "pipeline.batch-rows=10",
                    "-D", "heartbeat.interval=30 s", "-D", "heartbeat.timeout=120 s",
                    "-D", "metrics.progress.interval=0.5 s",
                    "-D", "web.refresh-interval=0.5 s", SHAPES, "--", "long", "--work", "0.3",
                    "--rows", "20000", "--hold", hold, "--out", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)
    assert "web UI: http" in proc.stdout and f"/proxy/{app_id}/pages/yarnflow/" in proc.stdout

    def page_url() -> str | None:
        ui = yarnflow("ui", app_id)
        return ui.stdout.strip() if ui.returncode == 0 else None
    url = wait_until(page_url, 120, f"`yarnflow ui {app_id}` to print the page", interval=1.0)
    assert url == web_page_url(yarn_cluster.app(app_id)["trackingUrl"])
    assert f"/proxy/{app_id}/pages/{WEB_PAGE_ROUTE}/" in url      # YARN's proxy, then Skein's

    def work_running() -> dict | None:
        try:
            jobs = get(url + "jobs/overview")["jobs"]
        except OSError:                                 # the page is not added yet
            return None
        return jobs[0] if jobs and jobs[0]["tasks"]["RUNNING"] >= 4 else None
    listed = wait_until(work_running, 180, "the job's subtasks RUNNING on the page", interval=0.5)
    jid = listed["jid"]

    # live progress (issue 34): records of running subtasks grow before any subtask ended,
    # in the REST API and in `yarnflow status`
    def live_records() -> int:
        job = get(url + f"jobs/{jid}")
        assert not job["status-counts"]["FINISHED"], f"a subtask finished first: {job}"
        return next(v for v in job["vertices"] if v["name"] == WORK)["metrics"]["read-records"]
    first = wait_until(live_records, 60, "the running work subtasks' records in the REST API")
    shown = status_rows(app_id)
    assert not any(int(row[4]) for row in shown.values() if row[4]), shown   # finished: none
    assert int(shown["work"][7].replace(",", "")) > 0, shown           # the operator's records in
    assert shown["work"][2:7] == [""] * 5 and shown["parquet-sink"][-1].endswith("%"), shown
    wait_until(lambda: live_records() > first, 60,
               "the work subtasks' records growing, no subtask finished yet", interval=0.5)
    assert metric(url, "yarnflow_vertex_records_in", WORK) > 0
    assert metric(url, "yarnflow_operator_records_out", WORK, operator="work") > 0
    job = get(url + f"jobs/{jid}")
    vid = next(v["id"] for v in job["vertices"] if v["name"] == WORK)
    chain = next(v for v in job["vertices"] if v["id"] == vid)["operators"]
    assert [op["name"] for op in chain] == ["work", "parquet-sink"]
    assert chain[0]["metrics"]["write-records"] >= chain[1]["metrics"]["read-records"] > 0
    for path, fields in ENDPOINTS.items():
        answer = get(url + path.format(jid=jid, vid=vid))
        assert fields <= set(answer), (path, sorted(fields - set(answer)))
    assert all(VERTEX_FIELDS <= set(v) for v in job["vertices"])
    assert all(SUBTASK_FIELDS <= set(s) for s in get(url + f"jobs/{jid}/vertices/{vid}")["subtasks"])
    executors = get(url + "taskmanagers")["taskmanagers"]
    assert executors and all(EXECUTOR_FIELDS <= set(e) for e in executors)
    assert {e["key"] for e in get(url + "jobmanager/config")} >= {"heartbeat.interval", "yarn.application-attempts"}

    # the values agree with YARN's own view and with what `yarnflow status` shows
    yarn_sizes = {c["containerId"]: c["allocatedMB"] for c in yarn_cluster.running_containers(app_id)}
    for executor in executors:
        if executor["state"] == "REGISTERED":
            assert yarn_sizes[executor["container-id"]] == executor["container"]["memory_mb"]
    with YarnApplication(app_id, 30) as app:
        details = app.job_details()
    assert (job["jid"], job["name"], job["application-attempt"]) == \
        (details.job_id, details.name, details.application_attempt)
    assert [(v["id"], v["name"], v["parallelism"]) for v in job["vertices"]] == \
        [(v.id, v.name, v.parallelism) for v in details.vertices]
    work = details.vertex_running("work")
    assert work.name == WORK and work.operators == ["work", "parquet-sink"]
    subtasks = get(url + f"jobs/{jid}/vertices/{vid}")["subtasks"]
    assert [(s["taskmanager-id"], s["host"]) for s in subtasks] == \
        [(s.resource_id, s.host) for s in work.subtasks]
    assert {s["container-id"] for s in subtasks} <= set(yarn_sizes)

    scraped = metric(url, "yarnflow_vertex_records_in", WORK)
    wait_until(lambda: metric(url, "yarnflow_vertex_records_in", WORK) > scraped, 60,
               "the work vertex's records growing between two scrapes through the proxy")

    # a real browser, through the ResourceManager's proxy
    shot = artifacts_dir() / "web-ui-yarn.png"
    dom = browse(chromium, f"{url}#/jobs/{jid}", shot)
    for vertex in ("arrow-source", WORK):
        assert f'data-vertex="{html.escape(vertex, quote=False)}"' in dom, dom[-3000:]
    assert 'data-status="RUNNING"' in dom
    sizes = {f"{e['container']['cpu']:g}c-{e['container']['memory_mb']}m" for e in executors}
    assert all(size in dom for size in sizes), (sizes, dom[-3000:])
    assert shot.stat().st_size > 10_000

    # safe: on the ApplicationMaster's loopback, no key, certificate or launch environment
    import skein
    from yarnflow.client.targets.app_store import ApplicationStore
    tls = ApplicationStore().credentials(app_id)      # the application's own, as the CLI's
    page = skein_client(30).connect(app_id, wait=False, security=skein.Security(
        cert_bytes=tls.cert_pem, key_bytes=tls.key_pem)).ui.get_pages()[WEB_PAGE_ROUTE]
    assert page.target.startswith("http://127.0.0.1:"), page.target
    served = b"".join(raw(url + p) for p in ("", "app.js", "overview", "jobmanager/config",
                                            "taskmanagers", f"jobs/{jid}", "metrics"))
    for secret in (b"PRIVATE KEY", b"BEGIN CERTIFICATE", b"YARNFLOW_CONF", b"YARNFLOW_JOB",
                   b"SKEIN_"):
        assert secret not in served, secret

    hdfs.fs.delete(f"{scratch}/hold")
    app = yarn_cluster.wait_finished(app_id)
    assert app["finalStatus"] == "SUCCEEDED", app["diagnostics"]
    assert hdfs.read_table(out).num_rows == 20000
    ended = yarnflow("ui", app_id)
    assert ended.returncode == 1 and "has ended" in ended.stdout and "yarnflow history" in ended.stdout, \
        ended.stdout + ended.stderr
