"""Hosts that fail every task, on the real cluster (issue 34, item 3): with the test-only
``test.taskmanager.failing-hosts`` on all NodeManager hosts but one, each failing host
the job runs on is blocked after 2 failures, the job finishes on the last host with
every row once, the REST API and `yarnflow status` name each blocked host with its
cause while it is blocked, and each block lifts by itself after its timeout while the
job still runs."""
from __future__ import annotations

import json
import urllib.request

import pytest

from tests.conftest import wait_until
from tests.yarn.conftest import FAST, PIPELINES, submitted_app_id, yarnflow

SHAPES = str(PIPELINES / "shapes.py")
pytestmark = pytest.mark.usefixtures("yarn_cluster")
BLOCK_S = 15


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=15) as response:
        return json.loads(response.read())


def test_hosts_that_fail_every_task_are_blocked_and_the_job_finishes_on_the_other(
        yarn_cluster, hdfs):
    hosts = sorted(n["nodeHostName"] for n in yarn_cluster.get("/ws/v1/cluster/nodes")
                   ["nodes"]["node"] if n["state"] == "RUNNING")
    assert len(hosts) >= 2, hosts
    failing = hosts[:-1]
    out = f"{hdfs.scratch('bad-hosts')}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST,
                    "-D", "cluster.resource-blocklist.enabled=true",
                    "-D", "cluster.resource-blocklist.task-failures=2",
                    "-D", f"cluster.resource-blocklist.item.timeout={BLOCK_S} s",
                    "-D", f"test.taskmanager.failing-hosts={','.join(failing)}",
                    "-D", "restart-strategy.type=fixed-delay",
                    "-D", "restart-strategy.fixed-delay.attempts=20",
                    "-D", "restart-strategy.fixed-delay.delay=1 s",
                    "-D", "pipeline.batch-rows=100",
                    SHAPES, "--", "long", "--work", "3", "--out", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = submitted_app_id(proc)

    def page() -> str | None:
        ui = yarnflow("ui", app_id)
        return ui.stdout.strip() if ui.returncode == 0 else None
    url = wait_until(page, 180, f"`yarnflow ui {app_id}` to print the page", interval=1.0)

    def job() -> dict | None:
        try:
            jobs = get(url + "jobs/overview")["jobs"]
            return get(url + f"jobs/{jobs[0]['jid']}") if jobs else None
        except OSError:
            return None
        except ValueError:       # the ResourceManager's proxy page: the application ended
            app = yarn_cluster.app(app_id)
            raise AssertionError(f"{app_id} ended {app['finalStatus']} while the test "
                                 f"watched it: {app['diagnostics']}") from None

    def blocked() -> list[dict]:
        now = job()
        return now["blocked-hosts"] if now else []
    first = wait_until(blocked, 300, "a failing host blocked, in the REST API", interval=1.0)
    assert {b["host"] for b in first} <= set(failing), first
    assert all("2 task failures within" in b["cause"] for b in first), first
    cluster_wide = {b["host"] for b in get(url + "overview")["blocked-hosts"]}
    assert {b["host"] for b in first} <= cluster_wide, "the ResourceManager's list, for every job"
    status = yarnflow("status", app_id)
    assert "hosts blocked by job" in status.stdout and first[0]["host"] in status.stdout, \
        status.stdout

    # every failing host the job tried is blocked in turn; the job then runs on the last
    # host (its sources may have finished already: they only read a table), and each
    # block lifts after its timeout while the job still runs
    def running_on_the_healthy_host_only() -> bool:
        now = job()
        tasks = now["tasks"] if now else {}
        return bool(now) and now["state"] == "RUNNING" and tasks["RUNNING"] > 0 and \
            tasks["RUNNING"] + tasks["FINISHED"] == tasks["total"]
    wait_until(running_on_the_healthy_host_only, 300, "every subtask RUNNING or FINISHED",
               interval=1.0)
    lifted = wait_until(lambda: (now := job()) is not None and not now["blocked-hosts"] and now,
                        BLOCK_S + 30, "the blocks lifted after their timeout", interval=1.0)
    assert lifted["state"] == "RUNNING", "the job outlived the blocks"

    app = yarn_cluster.wait_finished(app_id, 300)
    assert app["finalStatus"] == "SUCCEEDED", app["diagnostics"]
    got = hdfs.read_table(out)
    assert sorted(got.column("k").to_pylist()) == list(range(2000))
