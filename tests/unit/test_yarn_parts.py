"""The YARN pieces that need no cluster: container planning, the Hadoop configuration
reader, and the YARN driver against an in-memory stand-in for Skein's client."""
from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field

import pytest

import yarnflow.client as yf
from tests.conftest import wait_until
from yarnflow.appmaster.resourcemanager.drivers.yarn import YarnDriver
from yarnflow.core.contract import service_name
from yarnflow.core.worker_spec import WorkerSpec, plan_worker_specs
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.hadoop_conf import HadoopConf, HadoopConfigError
from yarnflow.client.targets.yarn import initial_instances, plan_containers
from yarnflow.rpc.codec import jobgraph_from_proto

R = ResourceSpec


def two_profile_job(mode: str = "EAGER") -> yf.Pipeline:
    p = yf.Pipeline("j", schedule_mode=mode)
    heavy = p.from_arrow(__import__("pyarrow").table({"x": [1]}), name="heavy") \
        .set_parallelism(2).resources(R(1, "3g")).slot_sharing_group("heavy")
    heavy.rebalance().map(lambda b: b, name="light").set_parallelism(6) \
        .resources(R(1, "512m")).slot_sharing_group("light")
    return p


def yarn_config(*overrides: str) -> Configuration:
    return Configuration.load(overrides=["resourcemanager.max-worker.memory=8192",
                                         "resourcemanager.max-worker.cpu=8",
                                         "yarn.python=/opt/python/bin/python3", *overrides])


def test_each_profile_gets_its_own_container_size_packed_up_to_the_slot_limit():
    config = yarn_config("taskmanager.numberOfTaskSlots=8")
    graph = two_profile_job().job_graph(config)
    specs = plan_containers(graph, config)
    heavy, light = specs[R(1, "3g")], specs[R(1, "512m")]
    assert (heavy.num_slots, heavy.container.memory_mb, heavy.vcores) == (2, 6400, 2)
    assert (light.num_slots, light.container.memory_mb, light.vcores) == (6, 3328, 6)
    assert initial_instances(graph, config, specs, []) == {heavy.name: 1, light.name: 1}


def test_one_slot_per_container_by_default_and_lazy_jobs_start_nothing_up_front():
    config = yarn_config()
    graph = two_profile_job("LAZY_FROM_SOURCES").job_graph(config)
    specs = plan_containers(graph, config)
    assert {s.num_slots for s in specs.values()} == {1}
    assert set(initial_instances(graph, config, specs, []).values()) == {0}


def test_packing_stops_at_the_largest_container():
    specs = plan_worker_specs(two_profile_job().job_graph(yarn_config()), R(1, 1024), 8, 256,
                              R(8, 8192))
    assert specs[R(1, "3g")].num_slots == 2          # 3 x 3 GB + 256 MB > 8 GB


def test_a_container_beyond_yarns_maximum_names_the_vertex_and_the_setting():
    config = yarn_config()
    p = yf.Pipeline("j")
    p.from_arrow(__import__("pyarrow").table({"x": [1]})) \
        .map(lambda b: b, name="fat").resources(R(1, "8000m"))
    graph = p.job_graph(config)
    with pytest.raises(InvalidPipelineError) as err:
        plan_containers(graph, config)
    # the map is chained to its source: the message names the chain
    assert "'arrow-source -> fat'" in str(err.value) and "yarn.scheduler.maximum-allocation-mb=8192" in str(err.value)


def test_service_names_are_what_skein_accepts():
    assert service_name(WorkerSpec(R(0.5, 512), 2, 256)) == "te-2x0_5c-512m"


def test_hadoop_conf_expands_variables_and_reads_the_maximum(tmp_path, monkeypatch):
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.hostname</name><value>rm.example"
        "</value></property><property><name>yarn.scheduler.maximum-allocation-mb</name>"
        "<value>16384</value></property></configuration>")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    conf = HadoopConf.load()
    assert conf.rm_address == "rm.example:8032"
    assert conf.max_allocation == (16384, 4)          # vcores: Hadoop's default


def test_unreachable_resource_manager_is_named_at_once(tmp_path, monkeypatch):
    with socket.socket() as s:                          # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.address</name>"
        f"<value>127.0.0.1:{port}</value></property></configuration>")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    with pytest.raises(HadoopConfigError, match=f"127.0.0.1:{port} is unreachable"):
        HadoopConf.load().check_rm_reachable(5)


def test_missing_hadoop_configuration_says_how_to_fix_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    with pytest.raises(HadoopConfigError, match="export HADOOP_CONF_DIR"):
        HadoopConf.load()


# --- the YARN driver against a stand-in for skein.ApplicationClient -------------------
@dataclass
class FakeContainer:
    service_name: str
    instance: int
    state: str = "REQUESTED"
    yarn_container_id: str = ""
    yarn_node_http_address: str = "127.0.0.2:8042"
    exit_message: str = ""

    @property
    def id(self) -> str:
        return f"{self.service_name}_{self.instance}"


@dataclass
class FakeSkeinApp:
    containers: dict[str, FakeContainer] = field(default_factory=dict)
    killed: list[str] = field(default_factory=list)
    answer: threading.Event | None = None      # add_container waits for it (a stuck AM)
    refuse: Exception | None = None

    def add_container(self, service: str) -> FakeContainer:
        if self.answer is not None:
            self.answer.wait()
        if self.refuse is not None:
            raise self.refuse
        c = FakeContainer(service, sum(x.service_name == service for x in self.containers.values()))
        c.yarn_container_id = f"container_1_0001_01_{len(self.containers) + 2:06d}"
        self.containers[c.id] = c
        return c

    def kill_container(self, container_id: str) -> None:
        self.killed.append(container_id)
        self.containers[container_id].state = "KILLED"

    def get_containers(self, states: list[str]) -> list[FakeContainer]:
        return [c for c in self.containers.values() if c.state in states]


class Events:
    def __init__(self) -> None:
        self.terminated: list[tuple[str, str]] = []
        self.spec_faults: list[bool] = []
        self.moved: list[tuple[str, str]] = []

    def on_worker_terminated(self, resource_id: str, cause: str, spec_fault: bool = True) -> None:
        self.terminated.append((resource_id, cause))
        self.spec_faults.append(spec_fault)

    def on_worker_moved(self, resource_id: str, new_resource_id: str) -> None:
        self.moved.append((resource_id, new_resource_id))


def test_driver_adds_and_kills_exactly_its_containers_and_reports_losses_with_yarns_cause():
    spec = WorkerSpec(R(1, 512), 1, 256)
    app, events = FakeSkeinApp(), Events()
    driver = YarnDriver(Configuration.load(overrides=["yarn.container-poll-interval=0.02 s"]),
                        app, {spec.name: service_name(spec)}, R(8, 8192))
    driver.start(events, "am:1")
    first, second = driver.request_worker(spec), driver.request_worker(spec)
    assert (first, second) == ("te-1x1c-512m_0", "te-1x1c-512m_1")
    driver.release_worker(first)
    assert app.killed == [first]
    app.containers[second].state = "FAILED"
    app.containers[second].exit_message = "Container preempted by scheduler"
    wait_until(lambda: events.terminated, 5, "the loss to be reported")
    driver.stop()
    (resource_id, cause), = events.terminated          # the released one is not a loss
    assert resource_id == second
    assert "container_1_0001_01_000003" in cause and "preempted" in cause and "FAILED" in cause


def _asked_of_a_stuck_skein() -> tuple[FakeSkeinApp, Events, YarnDriver, str]:
    """A worker asked of a Skein that answers only once the test lets it."""
    spec = WorkerSpec(R(1, 512), 1, 256)
    app, events = FakeSkeinApp(answer=threading.Event()), Events()
    driver = YarnDriver(Configuration.load(overrides=["yarn.appmaster.skein-timeout=0.2 s"]),
                        app, {spec.name: service_name(spec)}, R(8, 8192))
    driver.start(events, "am:1")
    return app, events, driver, driver.request_worker(spec)


def test_an_ask_skein_answers_late_is_still_an_ask_and_its_container_adopted():
    """Issue 53: a late answer is a container, not a failure."""
    app, events, driver, provisional = _asked_of_a_stuck_skein()
    assert events.terminated == [] and provisional not in app.containers
    app.answer.set()                       # Skein gets to it after all
    wait_until(lambda: events.moved, 5, "the late container to be adopted")
    assert events.moved == [(provisional, "te-1x1c-512m_0")] and app.killed == []
    app.containers["te-1x1c-512m_0"].state = "FAILED"      # and it is watched like any other
    app.containers["te-1x1c-512m_0"].exit_message = "Container failed during execution"
    wait_until(lambda: events.terminated, 5, "the adopted container's end to be reported")
    assert events.terminated[0][0] == "te-1x1c-512m_0" and events.spec_faults == [True]
    driver.stop()


def test_a_late_answer_for_a_worker_given_up_meanwhile_is_released():
    app, events, driver, provisional = _asked_of_a_stuck_skein()
    driver.release_worker(provisional)     # the ResourceManager's start timeout
    assert app.killed == []                # nothing to kill yet
    app.answer.set()
    wait_until(lambda: app.killed, 5, "the late container to be released")
    assert app.killed == ["te-1x1c-512m_0"] and events.moved == []
    driver.stop()


def test_an_ask_skein_refuses_is_a_failed_start_naming_skeins_reason():
    spec = WorkerSpec(R(1, 512), 1, 256)
    app, events = FakeSkeinApp(refuse=ValueError("Service 'te-1x1c-512m' is shutting down")), Events()
    driver = YarnDriver(Configuration.load(), app, {spec.name: service_name(spec)}, R(8, 8192))
    driver.start(events, "am:1")
    resource_id = driver.request_worker(spec)
    assert events.terminated == [(resource_id, "Skein's ApplicationMaster refused the container "
                                  "request: Service 'te-1x1c-512m' is shutting down")]
    assert events.spec_faults == [True]
    driver.stop()


def test_driver_refuses_a_spec_the_application_did_not_declare():
    driver = YarnDriver(Configuration.load(), FakeSkeinApp(), {}, R(8, 8192))
    with pytest.raises(RuntimeError, match="declared no container size"):
        driver.request_worker(WorkerSpec(R(1, 512), 1, 256))


def test_a_small_job_and_the_configuration_travel_in_the_launch_environment(tmp_path):
    """Nothing but what the ApplicationMaster needs is staged: a small JobGraph and the
    configuration ride in the environment; the executors get the configuration only."""
    import base64
    from yarnflow.rpc.generated import jobgraph_pb2
    from yarnflow.rpc.security import generate_application_credentials
    from yarnflow.core.contract import CONF_ENV, JOB_ENV
    from yarnflow.client.targets.yarn import build_spec
    import skein
    config = yarn_config()
    graph = two_profile_job().job_graph(config)
    creds = generate_application_credentials()
    spec = build_spec(graph, config, plan_containers(graph, config), tmp_path,
                      skein.Security(cert_bytes=creds.cert_pem, key_bytes=creds.key_pem), [])
    assert spec.master.files == {} and "--job" not in spec.master.script
    sent = jobgraph_pb2.JobGraph.FromString(base64.b64decode(spec.master.env[JOB_ENV]))
    assert jobgraph_from_proto(sent).job_id == graph.job_id
    from yarnflow.conf import options
    assert Configuration.from_json(base64.b64decode(spec.master.env[CONF_ENV]).decode()) \
        .get(options.MAX_WORKER_MEMORY) == 8192
    for service in spec.services.values():
        assert JOB_ENV not in service.env and CONF_ENV in service.env and service.files == {}


def test_a_job_too_big_for_the_environment_is_localized_as_a_file(tmp_path):
    import pyarrow as pa
    from yarnflow.core.contract import JOB_ENV, JOB_ENV_LIMIT
    from yarnflow.client.targets.yarn import build_spec
    config = yarn_config()
    p = yf.Pipeline("big")
    p.from_arrow(pa.table({"x": pa.array(range(JOB_ENV_LIMIT // 4), pa.int64())})) \
        .write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(config)
    spec = build_spec(graph, config, plan_containers(graph, config), tmp_path, None, [])
    assert "job.pb" in spec.master.files and spec.master.script.endswith("--job job.pb")
    assert JOB_ENV not in spec.master.env


def test_the_launch_environment_names_a_missing_variable(monkeypatch):
    from yarnflow.core.contract import CONF_ENV, decode_env, encode
    monkeypatch.delenv(CONF_ENV, raising=False)
    with pytest.raises(RuntimeError, match=CONF_ENV):
        decode_env(CONF_ENV)
    monkeypatch.setenv(CONF_ENV, encode(b"a: 1"))
    assert decode_env(CONF_ENV) == b"a: 1"


def test_application_credentials_are_a_quick_ec_key_that_names_skein_and_yarnflow():
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from yarnflow.rpc.security import CLUSTER_NAME, SKEIN_NAME, generate_application_credentials
    creds = generate_application_credentials()
    cert = x509.load_pem_x509_certificate(creds.cert_pem)
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == {SKEIN_NAME, CLUSTER_NAME}


def test_a_slot_hosting_spark_operators_counts_the_spark_jvm_once():
    config = yarn_config("taskmanager.spark.jvm-overhead=384m")
    p = yf.Pipeline("spark-sizing")
    src = p.from_arrow(__import__("pyarrow").table({"x": [1]})).resources(R(1, "512m"))
    src.spark_sql("SELECT x FROM input").resources(R(1, "1g")) \
       .spark_sql("SELECT x FROM input").resources(R(1, "1g"))
    graph = p.job_graph(config)
    assert graph.slot_profile("default", R(1, 1024)) == R(3, 512 + 1024 + 1024 + 384)
    plain = yf.Pipeline("no-spark")
    plain.from_arrow(__import__("pyarrow").table({"x": [1]})).resources(R(1, "512m"))
    assert plain.job_graph(config).slot_profile("default", R(1, 1024)) == R(1, 512)


def test_local_runs_keep_the_logs_of_their_last_runs(tmp_path):
    import os
    from yarnflow.conf import Configuration
    from yarnflow.client.targets.local import run_log_dir
    config = Configuration.load(None, (f"local.log-dir={tmp_path}", "local.log-retention=2"))
    runs = []
    for n in range(3):
        run = run_log_dir(config, f"job{n}")
        os.utime(run, (n, n))                       # oldest first, whatever the clock says
        runs.append(run)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(r.name for r in runs[1:])


def test_the_application_asks_yarn_for_the_configured_attempts(tmp_path):
    from yarnflow.client.targets.yarn import build_spec
    for attempts in ("1", "3"):
        config = yarn_config(f"yarn.application-attempts={attempts}")
        graph = two_profile_job().job_graph(config)
        spec = build_spec(graph, config, plan_containers(graph, config), tmp_path, None, [])
        assert spec.max_attempts == int(attempts)


def test_the_client_caps_attempts_at_yarns_maximum(tmp_path, monkeypatch):
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.am.max-attempts</name>"
        "<value>3</value></property></configuration>")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert HadoopConf.load().max_am_attempts == 3
    (tmp_path / "yarn-site.xml").write_text("<configuration></configuration>")
    assert HadoopConf.load().max_am_attempts == 2       # YARN's default


def test_an_attempt_failures_validity_interval_skein_cannot_submit_is_refused_in_one_line():
    from yarnflow.client.targets.yarn_client import prepare_config
    from yarnflow.client.targets.yarn_errors import YarnError
    config = yarn_config("yarn.application-attempt-failures-validity-interval=10 min")
    with pytest.raises(YarnError, match="^yarn.application-attempt-failures-validity-interval "
                                        "cannot be applied: .* Fix: remove the option"):
        prepare_config(config)


@pytest.mark.parametrize("container_id, attempt", [
    ("container_1700000000000_0007_01_000001", 1),
    ("container_e17_1700000000000_0007_02_000001", 2),
    ("container_1700000000000_0007_12_000001", 12),
    ("", 1), ("garbage", 1)])
def test_the_appmaster_reads_its_attempt_from_its_container_id(container_id, attempt):
    from yarnflow.appmaster.yarn_application import application_attempt
    assert application_attempt(container_id) == attempt


def test_the_attempt_running_a_job_crosses_the_wire_and_is_shown():
    from rich.console import Console
    from yarnflow.core.details import JobDetails
    from yarnflow.core.status import JobStatus
    from yarnflow.client.display import progress_table
    from yarnflow.rpc.codec import job_details_from_proto, job_details_to_proto
    details = JobDetails("job-1", "long", JobStatus.RUNNING, 1.0, application_attempt=2)
    assert job_details_from_proto(job_details_to_proto(details)) == details
    console = Console(width=160, record=True)
    console.print(progress_table(details))
    assert "ApplicationMaster attempt 2" in console.export_text()
    first = JobDetails("job-1", "long", JobStatus.RUNNING, 1.0)
    assert job_details_from_proto(job_details_to_proto(first)).application_attempt == 1


def test_a_job_that_ended_in_an_earlier_attempt_is_not_run_again(tmp_path):
    """Skein lets a non-last attempt end only SUCCEEDED: a job that failed or was
    cancelled comes back in the next attempt, which must end with the stored outcome
    instead of running it again."""
    from yarnflow.appmaster.yarn_entrypoint import ended_in_an_earlier_attempt
    from yarnflow.core.details import JobDetails
    from yarnflow.core.status import JobStatus
    from yarnflow.core.history import open_archive
    from yarnflow.rpc.codec import JOB_DETAILS
    history = str(tmp_path / "history")
    archive = open_archive(history, JOB_DETAILS)
    archive.store(JobDetails("failed-job", "j", JobStatus.FAILED, 1.0, 2.0,
                             failure="explode (1/1): ValueError: bad input"))
    archive.store(JobDetails("cancelled-job", "j", JobStatus.CANCELED, 1.0, 2.0))
    archive.store(JobDetails("running-job", "j", JobStatus.RUNNING, 1.0))
    status, diagnostics = ended_in_an_earlier_attempt(history, "failed-job", attempt=2)
    assert status == "FAILED" and "ValueError: bad input" in diagnostics
    assert ended_in_an_earlier_attempt(history, "cancelled-job", attempt=2)[0] == "KILLED"
    assert ended_in_an_earlier_attempt(history, "running-job", attempt=2) is None
    assert ended_in_an_earlier_attempt(history, "unknown-job", attempt=2) is None
    assert ended_in_an_earlier_attempt(history, "failed-job", attempt=1) is None   # no lookup


# --- locality: a service per container size and worker host ------------------------------
def test_each_container_size_gets_a_service_strictly_on_each_worker_host(tmp_path):
    from yarnflow.appmaster.yarn_application import load_worker_specs
    from yarnflow.core.contract import SERVICES_ENV, decode_env
    from yarnflow.client.targets.yarn import build_spec
    config = yarn_config()
    graph = two_profile_job().job_graph(config)
    specs = plan_containers(graph, config)
    spec = build_spec(graph, config, specs, tmp_path, None, ["nm1", "nm2"])
    assert len(spec.services) == 2 * 3
    on_hosts = {name: s for name, s in spec.services.items() if s.nodes}
    assert sorted(s.nodes[0] for s in on_hosts.values()) == ["nm1", "nm1", "nm2", "nm2"]
    assert all(not s.relax_locality and s.instances == 0 for s in on_hosts.values())
    import os
    os.environ[SERVICES_ENV] = spec.master.env[SERVICES_ENV]
    try:
        plan = load_worker_specs(decode_env(SERVICES_ENV))
    finally:
        del os.environ[SERVICES_ENV]
    for worker in specs.values():
        for host in ("nm1", "nm2"):
            service = plan.host_services[(worker.name, host)]
            assert spec.services[service].nodes == [host]
            assert spec.services[service].resources == spec.services[plan.services[worker.name]].resources


def test_a_job_that_reads_files_starts_no_container_before_its_splits_are_known(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    config = yarn_config()
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "in.parquet")
    p = yf.Pipeline("reads")
    p.read_parquet(str(tmp_path / "in.parquet")).write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(config)
    specs = plan_containers(graph, config)
    assert set(initial_instances(graph, config, specs, ["nm1"]).values()) == {0}
    assert sum(initial_instances(graph, config, specs, []).values()) >= 1, \
        "without hosts to ask on, YARN starts them with the application as before"


class _Container:
    def __init__(self, service: str, n: int) -> None:
        self.id = f"{service}_{n}"
        self.state = "REQUESTED"
        self.yarn_node_http_address = ""
        self.yarn_container_id = f"container_1_0001_01_{n:06d}"
        self.exit_message = ""

    def place(self, host: str) -> None:
        self.state, self.yarn_node_http_address = "RUNNING", f"{host}:8042"


class _SkeinApp:
    """Skein's ApplicationClient as the driver uses it: containers it asked for stay
    REQUESTED until the test places them."""
    def __init__(self) -> None:
        self.added: list[str] = []
        self.containers: dict[str, _Container] = {}
        self.killed: list[str] = []

    def add_container(self, service: str) -> _Container:
        self.added.append(service)
        container = _Container(service, len(self.added))
        self.containers[container.id] = container
        return container

    def kill_container(self, container_id: str) -> None:
        self.killed.append(container_id)
        self.containers[container_id].state = "KILLED"

    def get_containers(self, states: list[str]) -> list[_Container]:
        return [c for c in self.containers.values() if c.state in states]


class _Events:
    def __init__(self) -> None:
        self.moved: list[tuple[str, str]] = []
        self.terminated: list[str] = []
        self.spec_faults: list[bool] = []

    def on_worker_terminated(self, resource_id: str, cause: str, spec_fault: bool = True) -> None:
        self.terminated.append(resource_id)
        self.spec_faults.append(spec_fault)

    def on_worker_moved(self, resource_id: str, new_resource_id: str) -> None:
        self.moved.append((resource_id, new_resource_id))


def _driver(app: _SkeinApp, clock=None):
    from yarnflow.appmaster.resourcemanager.drivers.yarn import YarnDriver
    from yarnflow.core.clock import ManualClock
    spec = WorkerSpec(R(1, 1024), 1, 256)
    clock = clock or ManualClock()
    driver = YarnDriver(yarn_config("yarn.locality.wait=3 s"), app, {spec.name: "te-a"}, R(8, 8192),
                        {(spec.name, "nm1"): "te-a-h0", (spec.name, "nm2"): "te-a-h1"}, clock)
    events = _Events()
    driver._events = events
    return driver, spec, clock, events


def test_the_driver_asks_for_a_worker_in_the_service_of_its_best_host_it_has():
    app = _SkeinApp()
    driver, spec, _, _ = _driver(app)
    driver.request_worker(spec, ("nm2", "nm1"))
    driver.request_worker(spec, ("nm9", "nm1"))      # no service on nm9: the next best
    driver.request_worker(spec, ("nm9",))
    driver.request_worker(spec)
    assert app.added == ["te-a-h1", "te-a-h0", "te-a", "te-a"]


def test_a_worker_its_host_did_not_take_within_the_locality_wait_is_asked_anywhere():
    app = _SkeinApp()
    driver, spec, clock, events = _driver(app)
    waiting = driver.request_worker(spec, ("nm1",))
    placed = driver.request_worker(spec, ("nm2",))
    app.containers[placed].state = "RUNNING"          # nm2 took its container in time
    clock.advance(5 + 2.9)          # Skein's idle heartbeat passes it on, then the wait
    driver._ask_anywhere_when_overdue()
    assert app.killed == [] and events.moved == []
    clock.advance(0.2)
    driver._ask_anywhere_when_overdue()
    assert app.killed == [waiting], "the strict request is withdrawn"
    assert app.added[-1] == "te-a" and events.moved == [(waiting, "te-a_3")]
    clock.advance(10)
    driver._ask_anywhere_when_overdue()
    assert len(app.added) == 3, "asked anywhere once, and the placed one is left alone"


def test_a_host_yarn_lost_is_never_asked_again_and_its_waiting_asks_go_anywhere():
    """Issue 53: nm2 dies while containers start there. YARN reports its placed
    container released on a lost node: that says nothing of the spec, the request still
    waiting on nm2's service is withdrawn and asked anywhere at once (no locality wait),
    and no later worker is asked there, however much its locality prefers nm2, until a
    container asked after the loss runs there again."""
    app = _SkeinApp()
    driver, spec, clock, events = _driver(app)
    placed = driver.request_worker(spec, ("nm2",))
    waiting = driver.request_worker(spec, ("nm2",))
    app.containers[placed].place("nm2")
    app.containers[placed].state = "FAILED"
    app.containers[placed].exit_message = "Container released on a *lost* node"
    driver.poll_once()
    assert events.terminated == [placed] and events.spec_faults == [False]
    assert driver.lost_hosts() == {"nm2"} and driver.worker_hosts() == {"nm1"}
    assert app.killed == [waiting] and events.moved == [(waiting, "te-a_3")], \
        "withdrawn from the lost host at once, asked anywhere"
    driver.request_worker(spec, ("nm2", "nm1"))          # locality says nm2, then nm1
    driver.request_worker(spec, ("nm2",))                # only nm2: anywhere
    driver.request_worker(spec, avoid=frozenset({"nm1"}))   # blocked nm1, lost nm2: anywhere
    assert app.added == ["te-a-h1", "te-a-h1", "te-a", "te-a-h0", "te-a", "te-a"]
    app.containers["te-a_5"].place("nm2")                # YARN put an anywhere-ask there
    driver.poll_once()
    assert driver.lost_hosts() == set(), "a container asked after the loss runs there"
    driver.request_worker(spec, ("nm2",))
    assert app.added[-1] == "te-a-h1"


def test_a_container_that_fails_by_itself_or_its_memory_blames_the_spec():
    from yarnflow.appmaster.resourcemanager.drivers.yarn import blames_the_spec
    assert blames_the_spec("Container failed during execution, see logs for more information.")
    assert blames_the_spec("Container killed on request. Exit code is 143 ... running beyond "
                           "the 'PHYSICAL' memory limit")
    assert not blames_the_spec("Container released on a *lost* node")
    assert not blames_the_spec("Container preempted by scheduler")
    assert not blames_the_spec("Failed to start, exception raised: Connection refused")


def test_skeins_appmaster_gets_the_clients_site_files_with_its_nodemanager_client_bounded(tmp_path):
    """Issue 53: Skein starts containers from one thread, which a dead host held for
    minutes in Hadoop's NodeManager client; the client ships its own site files with
    yarn-site.xml bounded, and nothing else of its configuration directory."""
    import io
    import xml.etree.ElementTree as ET
    import zipfile
    from yarnflow.client.targets.appmaster_conf import appmaster_conf_archive
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.hostname</name><value>rm</value>"
        "</property><property><name>yarn.client.nodemanager-connect.max-wait-ms</name>"
        "<value>180000</value></property></configuration>")
    (tmp_path / "core-site.xml").write_text("<configuration/>")
    (tmp_path / "ssl-client.xml").write_text("<configuration><!-- a password --></configuration>")
    data = appmaster_conf_archive(Configuration.load(overrides=[
        "yarn.appmaster.nodemanager-timeout=30 s"]), tmp_path)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == ["core-site.xml", "yarn-site.xml"]
        props = {p.findtext("name"): p.findtext("value")
                 for p in ET.fromstring(archive.read("yarn-site.xml")).iter("property")}
    assert props["yarn.resourcemanager.hostname"] == "rm"
    assert props["yarn.client.nodemanager-connect.max-wait-ms"] == "30000"
    assert props["ipc.client.rpc-timeout.ms"] == "30000"
    assert appmaster_conf_archive(Configuration.load(), tmp_path) == data, "the same bytes each time"


# --- one private Skein driver per client process ---------------------------------------
class FakeDriverProcess:
    def __init__(self) -> None:
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode


class FakeSkeinClient:
    """skein.Client as far as skein_client uses it: a driver process it started."""
    started: list["FakeSkeinClient"] = []

    def __init__(self, log: str, **login: str) -> None:
        self._proc = FakeDriverProcess()
        self.login = login
        FakeSkeinClient.started.append(self)

    @classmethod
    def from_global_driver(cls) -> "FakeSkeinClient":
        import skein
        raise skein.exceptions.DriverNotRunningError("no global driver")


def test_a_process_starts_one_private_skein_driver_per_login_and_replaces_a_dead_one(
        monkeypatch, tmp_path):
    """An attached run asks YARN about its application every half second: each ask must
    not start a JVM (the polls of one cold per-job run started 20 drivers, 4.5 CPU-s
    each)."""
    import skein
    from yarnflow.client.targets import yarn_client
    from yarnflow.client.targets.kerberos import KerberosLogin
    monkeypatch.setattr(skein, "Client", FakeSkeinClient)
    monkeypatch.setattr(yarn_client, "_DRIVERS", {})
    monkeypatch.setattr(yarn_client, "check_driver_prerequisites", lambda timeout: None)
    monkeypatch.setenv("HOME", str(tmp_path))
    FakeSkeinClient.started = []
    first = yarn_client.skein_client(5)
    assert [yarn_client.skein_client(5) for _ in range(3)] == [first] * 3
    assert len(FakeSkeinClient.started) == 1

    keytab = KerberosLogin("alice@EXAMPLE.COM", str(tmp_path / "alice.keytab"))
    alice = yarn_client.skein_client(5, keytab)
    assert alice is not first and alice.login == keytab.skein_args()
    assert yarn_client.skein_client(5, keytab) is alice
    assert yarn_client.skein_client(5) in (first, alice)     # no login: either will do
    assert len(FakeSkeinClient.started) == 2

    first._proc.returncode = 1
    alice._proc.returncode = 1               # both drivers died: the next ask starts one
    again = yarn_client.skein_client(5)
    assert again not in (first, alice) and len(FakeSkeinClient.started) == 3


def test_a_container_killed_for_its_memory_is_told_in_one_line_with_the_fix():
    from types import SimpleNamespace
    from yarnflow.appmaster.resourcemanager.drivers.yarn import describe_completion
    said = ("[2026-12-03 10:01:02.345]Container [pid=4242,containerID=container_1_0001_01_000002] "
            "is running 2.1 GB beyond the 'PHYSICAL' memory limit. Current usage: 3.3 GB of "
            "1.25 GB physical memory used; 5.6 GB of 2.6 GB virtual memory used. Killing "
            "container.\nDump of the process-tree for container_1_0001_01_000002 :\n|- PID ...\n"
            "[2026-12-03 10:01:02.400]Container killed on request. Exit code is 143")
    line = describe_completion(SimpleNamespace(
        exit_message=said, yarn_node_http_address="nm2:8042",
        yarn_container_id="container_1_0001_01_000002", id="te-a_0", state="FAILED"))
    assert line == ("YARN container container_1_0001_01_000002 on nm2:8042 was killed by its "
                    "NodeManager for using 3.3 GB of physical memory, more than its container's "
                    "1.25 GB; fix: raise taskmanager.memory.overhead (the executor's own process) "
                    "or the slots' memory (taskmanager.default-slot.memory, or the operators' "
                    "ResourceSpec), or lower taskmanager.memory.managed.fraction")
    assert "\n" not in line
    shortened = describe_completion(SimpleNamespace(        # as Skein passed it on
        exit_message="3.1 GB of 1.3 GB physical memory used", yarn_node_http_address="nm2:8042",
        yarn_container_id="container_1_0001_01_000002", id="te-a_0", state="FAILED"))
    assert "killed by its NodeManager for using 3.1 GB of physical memory, more than its " \
        "container's 1.3 GB; fix: raise taskmanager.memory.overhead" in shortened
    assert describe_completion(SimpleNamespace(
        exit_message="Container released on a *lost* node", yarn_node_http_address="nm2:8042",
        yarn_container_id="c", id="te-a_0", state="FAILED")).endswith("lost* node")
