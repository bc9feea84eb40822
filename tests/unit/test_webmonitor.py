"""The web monitor against ``TestingWebMonitorSource``: every endpoint's documented
fields, the page's files, Prometheus' format, and what the server must never do
(answer anything but a read, show a secret)."""
from __future__ import annotations

import json
from typing import Any
import urllib.error
import urllib.request

import pytest

from tests.unit.fakes import TestingWebMonitorSource
from yarnflow.appmaster.webmonitor import WebMonitorServer
from yarnflow.core.details import (ExceptionEntry, ExecutorDetails, JobDetails, SubtaskDetails,
                                   VertexDetails, VertexInput)
from yarnflow.core.messages import ClusterOverview, TaskMetrics, WorkerInfo
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import ExecutionState, JobStatus

R = ResourceSpec
NOW = 1_700_000_100.0


def sample_job() -> JobDetails:
    def sub(i: int, state: ExecutionState, records: int) -> SubtaskDetails:
        return SubtaskDetails(i, state, attempt=1, resource_id=f"w2c_{i}", host="node-1",
                              metrics=TaskMetrics(records, records, records * 10, records * 10),
                              state_timestamps={"RUNNING": 1_700_000_010.0},
                              slot_profile=R(2, 2048), worker_spec="1x2c-2048m")
    source = VertexDetails("v-src", "read", 2, [sub(0, ExecutionState.FINISHED, 100),
                                                 sub(1, ExecutionState.FINISHED, 300)])
    join = VertexDetails("v-join", "join", 2, [sub(0, ExecutionState.RUNNING, 50),
                                                sub(1, ExecutionState.DEPLOYING, 0)],
                         inputs=[VertexInput("read", "hash")])
    return JobDetails("j1", "orders", JobStatus.RUNNING, start_time=1_700_000_000.0,
                      vertices=[source, join], restarts=1, application_attempt=2,
                      exceptions=[ExceptionEntry(1_700_000_050.0, "join (2/2)", 0, "w2c_1",
                                                 "node-2", "container lost")])


def sample_plan() -> list[dict]:
    return [{"id": "v-src", "name": "read", "parallelism": 2, "slot_sharing_group": "default",
             "subtask_profile": {"cpu": 2, "memory_mb": 2048, "gpus": 0}, "uses_spark": False,
             "estimate": {"rows": 400, "bytes": 4000, "from": "parquet metadata"}, "inputs": []},
            {"id": "v-join", "name": "join", "parallelism": 2, "slot_sharing_group": "default",
             "subtask_profile": {"cpu": 2, "memory_mb": 2048, "gpus": 0}, "uses_spark": False,
             "estimate": {"rows": None, "bytes": None, "from": ""},
             "inputs": [{"index": 0, "producer": "read", "producer_id": "v-src", "ship": "HASH",
                         "keys": ["k"], "exchange": "BLOCKING"}]}]


@pytest.fixture
def served():
    source = TestingWebMonitorSource()
    source.job_details["j1"] = sample_job()
    source.plans["j1"] = sample_plan()
    source.executor_list = [
        ExecutorDetails("w2c_0", "REGISTERED", "1x2c-2048m", R(2, 2560), R(2, 2048), 1, 1,
                        "node-1", "container_1_0001_02_000002", "node-1:8042"),
        ExecutorDetails("w2c_1", "STARTING", "1x2c-2048m", R(2, 2560), R(2, 2048), 1, 0)]
    source.overview = ClusterOverview((WorkerInfo("w2c_0", "1x2c-2048m", R(2, 2048), 1, 0),),
                                      pending_workers=1, pending_slot_requests=1)
    source.values = {"heartbeat.interval": "10.0", "fs.s3a.secret.key": "abc123",
                     "security.ssl.keystore-password": "hunter2"}
    server = WebMonitorServer(source, clock=lambda: NOW).start()
    yield server, source
    server.stop()


def get(server: WebMonitorServer, path: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


def get_json(server: WebMonitorServer, path: str) -> dict:
    status, content_type, body = get(server, path)
    assert status == 200 and content_type == "application/json", (path, status, body)
    return json.loads(body)


def test_overview_counts_jobs_slots_and_containers_by_size(served):
    server, _ = served
    overview = get_json(server, "overview")
    assert overview["jobs-running"] == 1 and overview["jobs-finished"] == 0
    assert (overview["taskmanagers"], overview["slots-total"], overview["slots-available"]) == (1, 1, 0)
    assert overview["pending-slot-requests"] == 1 and overview["taskmanagers-starting"] == 1
    assert overview["containers-by-size"] == {"2c-2560m": 2}
    assert (overview["application-id"], overview["application-attempt"]) == ("application_1_0001", 2)
    assert overview["blocked-hosts"] == []


def test_the_overview_names_the_hosts_the_resource_manager_blocked(served):
    from yarnflow.core.blocklist import BlockedNode
    server, source = served
    source.blocked = [BlockedNode("nm-2", "3 task failures within 300 s", 1_700_000_000.0,
                                  1_700_000_600.0)]
    assert get_json(server, "overview")["blocked-hosts"] == [
        {"host": "nm-2", "cause": "3 task failures within 300 s", "since": 1_700_000_000_000,
         "until": 1_700_000_600_000}]


def test_jobs_overview_and_job_details_carry_states_timings_and_metrics(served):
    server, _ = served
    [listed] = get_json(server, "jobs/overview")["jobs"]
    assert (listed["jid"], listed["name"], listed["state"]) == ("j1", "orders", "RUNNING")
    assert listed["duration"] == 100_000 and listed["tasks"]["FINISHED"] == 2
    job = get_json(server, "jobs/j1")
    assert job["restarts"] == 1 and job["application-attempt"] == 2
    read, join = job["vertices"]
    assert (read["name"], read["status"], read["parallelism"]) == ("read", "FINISHED", 2)
    assert read["metrics"]["read-records"] == 400 and read["metrics"]["write-bytes"] == 4000
    assert read["metrics"]["input-skew"] == 1.5          # 300 / mean 200, as the CLI shows it
    assert read["subtask-profile"] == {"cpu": 2, "memory_mb": 2048, "gpus": 0}
    assert join["status"] == "RUNNING" and join["tasks"]["DEPLOYING"] == 1   # one runs: RUNNING
    assert join["inputs"] == [{"num": 0, "producer": "read", "ship_strategy": "HASH"}]


def test_the_plan_has_ship_strategies_exchanges_and_estimates(served):
    server, _ = served
    nodes = get_json(server, "jobs/j1/plan")["plan"]["nodes"]
    assert [n["description"] for n in nodes] == ["read", "join"]
    assert nodes[0]["estimate"] == {"rows": 400, "bytes": 4000, "from": "parquet metadata"}
    [edge] = nodes[1]["inputs"]
    assert (edge["id"], edge["ship_strategy"], edge["keys"], edge["exchange"]) == \
        ("v-src", "HASH", ["k"], "BLOCKING")


def test_a_vertex_lists_subtasks_with_executor_container_and_host(served):
    server, _ = served
    vertex = get_json(server, "jobs/j1/vertices/v-src")
    first = vertex["subtasks"][0]
    assert (first["taskmanager-id"], first["container-id"], first["host"]) == \
        ("w2c_0", "container_1_0001_02_000002", "node-1")
    assert first["status"] == "FINISHED" and first["attempt"] == 1
    assert first["metrics"]["read-records"] == 100
    assert first["slot-profile"] == {"cpu": 2, "memory_mb": 2048, "gpus": 0}
    assert get(server, "jobs/j1/vertices/nope")[0] == 404


def test_exceptions_and_taskmanagers(served):
    server, _ = served
    [entry] = get_json(server, "jobs/j1/exceptions")["exceptionHistory"]["entries"]
    assert (entry["taskName"], entry["taskManagerId"], entry["exceptionName"]) == \
        ("join (2/2)", "w2c_1", "container lost")
    executors = get_json(server, "taskmanagers")["taskmanagers"]
    assert [(e["id"], e["state"], e["container"]["memory_mb"], e["slots-used"]) for e in executors] \
        == [("w2c_0", "REGISTERED", 2560, 1), ("w2c_1", "STARTING", 2560, 0)]
    assert executors[0]["node"] == "node-1:8042"


@pytest.mark.parametrize("states, shown", [
    (("FINISHED", "FINISHED"), "FINISHED"), (("FINISHED", "CREATED"), "RUNNING"),
    (("DEPLOYING", "SCHEDULED"), "DEPLOYING"), (("RUNNING", "FAILED"), "FAILED"),
    (("CANCELING", "FINISHED"), "CANCELED"), (("CREATED", "CREATED"), "CREATED")])
def test_a_vertex_shows_its_subtasks_states_as_one(states, shown):
    from yarnflow.appmaster.webmonitor.views import vertex_status
    assert vertex_status([SubtaskDetails(i, ExecutionState[s]) for i, s in enumerate(states)]) == shown


def test_an_unknown_job_is_a_404_naming_it(served):
    server, _ = served
    status, _, body = get(server, "jobs/nope")
    assert status == 404 and "nope" in json.loads(body)["errors"][0]


def test_the_configuration_hides_sensitive_values(served):
    server, _ = served
    config = {e["key"]: e["value"] for e in get_json(server, "jobmanager/config")}
    assert config["heartbeat.interval"] == "10.0"
    assert config["fs.s3a.secret.key"] == "******"
    assert config["security.ssl.keystore-password"] == "******"
    everything = b"".join(get(server, p)[2] for p in
                          ("overview", "jobs/overview", "jobs/j1", "taskmanagers", "jobmanager/config"))
    assert b"abc123" not in everything and b"hunter2" not in everything


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_the_server_only_reads(served, method):
    server, source = served
    request = urllib.request.Request(server.url + "jobs", data=b"{}", method=method)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 405
    assert list(source.job_details) == ["j1"]


def test_the_page_is_served_with_a_policy_that_loads_nothing_from_elsewhere(served):
    server, _ = served
    for path, kind in (("", "text/html"), ("app.js", "text/javascript"), ("style.css", "text/css")):
        status, content_type, body = get(server, path)
        assert status == 200 and content_type.startswith(kind) and body
    with urllib.request.urlopen(server.url, timeout=10) as response:
        assert "default-src 'self'" in response.headers["Content-Security-Policy"]
        page = response.read().decode()
    assert "http://" not in page and "https://" not in page


def test_prometheus_metrics_per_vertex_and_for_the_cluster(served):
    from prometheus_client.parser import text_string_to_metric_families
    server, _ = served
    status, content_type, body = get(server, "metrics")
    assert status == 200 and content_type.startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body.decode()) for s in family.samples}
    labels = (("job_id", "j1"), ("job_name", "orders"), ("vertex", "read"))
    assert samples[("yarnflow_vertex_records_in", labels)] == 400
    assert samples[("yarnflow_vertex_bytes_out", labels)] == 4000
    assert samples[("yarnflow_slots_total", ())] == 1 and samples[("yarnflow_slots_used", ())] == 1
    assert samples[("yarnflow_pending_slot_requests", ())] == 1
    assert samples[("yarnflow_containers", (("size", "2c-2560m"), ("state", "STARTING")))] == 1
    assert samples[("yarnflow_job_restarts", (("job_id", "j1"), ("job_name", "orders")))] == 1


def test_a_job_names_its_speculative_attempts_the_slow_ones_and_which_won(served):
    from tests.rest_contract import SPECULATION_FIELDS
    from yarnflow.core.details import SpeculationOutcome, SpeculativeAttempt
    server, source = served
    assert get_json(server, "jobs/j1")["speculations"] == []
    source.job_details["j1"].speculations = [SpeculativeAttempt(
        "join (2/2)", 1, 0, "node-2", 1_700_000_060.0, "it ran 16.0 s, over 1.5 × the median "
        "10.0 s of the 3 of 4 subtasks that finished", "node-1", SpeculationOutcome.WON,
        "it finished first, in 6.0 s; attempt 0 cancelled, their output discarded")]
    [shown] = get_json(server, "jobs/j1")["speculations"]
    assert set(shown) == SPECULATION_FIELDS
    assert (shown["subtask"], shown["attempt"], shown["host"], shown["slow-attempt"],
            shown["slow-host"], shown["outcome"], shown["started"]) == \
        ("join (2/2)", 1, "node-1", 0, "node-2", "won", 1_700_000_060_000)
    assert shown["reason"].startswith("it ran 16.0 s") and "finished first" in shown["note"]
    _, _, script = get(server, "app.js")
    assert b"Speculative attempts" in script and b'job.speculations' in script


def sorted_job() -> JobDetails:
    """A finished sort of three ranges, the middle one heavier."""
    def sub(i: int, first: str, last: str, records: int) -> SubtaskDetails:
        spilled = (5_000, 3) if i == 1 else (0, 0)     # more than it read: too small a slot
        return SubtaskDetails(i, ExecutionState.FINISHED, metrics=TaskMetrics(
            records, records, records * 8, records * 8, key_range=(first, last),
            spilled_bytes=spilled[0], spill_files=spilled[1]))
    sort = VertexDetails("v-sort", "sort -> parquet-sink", 3,
                         [sub(0, "0", "41", 100), sub(1, "41", "97", 250), sub(2, "97", "None", 90)],
                         inputs=[VertexInput("sort-partition", "range")])
    return JobDetails("j2", "sorted", JobStatus.FINISHED, start_time=1_700_000_000.0,
                      end_time=1_700_000_050.0, vertices=[sort])


def test_a_sort_lists_its_ranges_with_their_first_and_last_keys_and_bytes(served):
    server, source = served
    source.job_details["j2"] = sorted_job()
    [sort] = get_json(server, "jobs/j2")["vertices"]
    assert sort["ranges"] == [
        {"subtask": 0, "first": "0", "last": "41", "read-records": 100, "read-bytes": 800},
        {"subtask": 1, "first": "41", "last": "97", "read-records": 250, "read-bytes": 2000},
        {"subtask": 2, "first": "97", "last": "None", "read-records": 90, "read-bytes": 720}]
    assert get_json(server, "jobs/j1")["vertices"][0]["ranges"] == []     # not a sort
    subtask = get_json(server, "jobs/j2/vertices/v-sort")["subtasks"][1]
    assert subtask["metrics"]["key-range"] == ["41", "97"]
    assert (subtask["metrics"]["spilled-bytes"], subtask["metrics"]["spill-files"]) == (5_000, 3)
    assert (sort["metrics"]["spilled-bytes"], sort["metrics"]["spill-files"]) == (5_000, 3)


def streaming_job() -> Any:
    """A running streaming job: two checkpoints completed, one failed, watermarks and
    a source's lag reported by its subtasks."""
    from yarnflow.appmaster.jobmaster.checkpoint.stats import (CheckpointRecord,
                                                               CheckpointStatsTracker)
    from yarnflow.core.streaming.snapshots import SubtaskCheckpointMetrics
    stats = CheckpointStatsTracker()
    for checkpoint_id, ok in ((1, True), (2, False), (3, True)):
        stats.triggered(CheckpointRecord(checkpoint_id, "checkpoint", "IN_PROGRESS",
                                         NOW * 1000, total=2))
        stats.acknowledged(checkpoint_id, "window#0", SubtaskCheckpointMetrics(
            sync_ms=1, async_ms=5, alignment_ms=2, size=512), NOW * 1000 + 40)
        stats.ended(checkpoint_id, ok, NOW * 1000 + 50, size=1024 * checkpoint_id,
                    location=f"file:///chk/job/chk-{checkpoint_id}",
                    failure="" if ok else "expired: not acknowledged within 60 s by window (1/2)")
    job = sample_job()
    job.job_id, job.name = "s1", "clicks"
    job.checkpoints = {**stats.as_json(), "config": {"interval": 10000}}
    for index, subtask in enumerate(job.vertices[0].subtasks):
        subtask.metrics.watermark = 1_700_000_000_000 + index * 1000
        subtask.metrics.lag = 10 + index
    return job


def test_a_streaming_jobs_checkpoints_in_flinks_shape(served):
    server, source = served
    source.job_details["s1"] = streaming_job()
    body = get_json(server, "jobs/s1/checkpoints")
    assert body["counts"] == {"restored": 0, "total": 3, "in_progress": 0, "completed": 2,
                              "failed": 1}
    assert body["latest"]["completed"]["id"] == 3
    assert body["latest"]["completed"]["external_path"] == "file:///chk/job/chk-3"
    assert "expired" in body["latest"]["failed"]["failure_message"]
    assert [c["id"] for c in body["history"]] == [3, 2, 1]
    assert body["history"][0]["subtasks"]["window#0"]["alignment_duration"] == 2
    assert get_json(server, "jobs/s1/checkpoints/config") == {"interval": 10000}
    status, _, said = get(server, "jobs/j1/checkpoints")      # a batch job has none
    assert status == 404 and b"not a streaming job" in said


def test_prometheus_has_checkpoint_watermark_and_lag_gauges(served):
    from prometheus_client.parser import text_string_to_metric_families
    server, source = served
    source.job_details["s1"] = streaming_job()
    _, _, body = get(server, "metrics")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body.decode()) for s in family.samples}
    job = (("job_id", "s1"), ("job_name", "clicks"))
    assert samples[("yarnflow_job_checkpoints_completed", job)] == 2
    assert samples[("yarnflow_job_checkpoints_failed", job)] == 1
    assert samples[("yarnflow_job_last_checkpoint_size_bytes", job)] == 3072
    vertex = job + (("vertex", "read"),)
    assert samples[("yarnflow_vertex_watermark_ms", tuple(sorted(vertex)))] == 1_700_000_000_000
    assert samples[("yarnflow_source_records_lag", tuple(sorted(vertex)))] == 21
