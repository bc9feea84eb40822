"""Shared fixtures. Timeouts are shortened so failure paths finish in seconds."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from yarnflow.conf import Configuration
from yarnflow.conf.configuration import ENV_CONF_DIR

# The suite's own configuration file, for this process and every one it starts here
# (the dockerised cluster's hosts have their own settings): tests/conf/yarnflow.yaml.
os.environ[ENV_CONF_DIR] = str(Path(__file__).resolve().parent / "conf")
# and Spark's, for Spark sessions started outside a TaskExecutor (tests/conf/spark)
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).resolve().parent / "conf" / "spark"))

FAST = [
    "heartbeat.interval=0.5 s", "heartbeat.timeout=5 s",
    "resourcemanager.taskmanager-timeout=2 s", "slot.idle.timeout=1 s",
    "slot.request.timeout=60 s", "job.cancel.timeout=10 s",
    "taskmanager.network.partition-request-timeout=20 s",
]

# For a test about how a failure looks, not about recovering from it: the default
# restart strategy would retry user code that always raises for about half a minute.
NO_RESTART = ["restart-strategy.type=none"]


CLUSTERS = ("docker", "native", "given")


def yarn_test_cluster() -> str:
    """Which YARN cluster tests/yarn runs against, from YARNFLOW_TEST_CLUSTER:
    ``docker`` (the default: the dockerised cluster's edge host runs it, relayed by
    tests/docker/test_yarn_tier.py), ``native`` (docker-hadoop/native on this machine)
    or ``given`` (one that is up, named by YARNFLOW_TEST_YARN_RM and its kin: what the
    relay sets on the edge host)."""
    mode = os.environ.get("YARNFLOW_TEST_CLUSTER", "docker")
    if mode not in CLUSTERS:
        raise pytest.UsageError(f"YARNFLOW_TEST_CLUSTER={mode!r} is none of {', '.join(CLUSTERS)}")
    return mode


# A tier per folder, each a pytest marker: `pytest tests -m unit` runs one tier.
TIERS = {
    "unit": "in-process, fakes behind the gateways, a manual clock (seconds)",
    "integration": "real processes and gRPC on this machine, the local target (minutes)",
    "yarn": "on a real Hadoop YARN cluster (the dockerised one's edge host by default)",
    "docker": "the dockerised cluster itself: its hosts, host-level faults, the YARN tier's relay",
}


# pytest-xdist processes when the command line names none: one per dockerised
# cluster (DOCKER_CLUSTERS) and one for the unit and integration tiers (which the
# secure cluster's process joins when its module is done). Nearly every
# test here waits on processes, containers or timeouts, so one at a time leaves a
# 2-core machine mostly idle.
DEFAULT_PROCESSES = 4
# Without the docker tier (`-m "unit or integration"`): its tests mostly sleep in user
# code, wait for executors and poll, so a third process on 2 cores still shortens the run
PROCESSES_WITHOUT_DOCKER = 3


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``-n`` defaults to DEFAULT_PROCESSES, or PROCESSES_WITHOUT_DOCKER when ``-m``
    leaves the docker tier out; ``-n 0`` (or ``-p no:xdist``) runs in this process, as
    do a worker, ``--collect-only`` and ``--pdb``."""
    option = config.option
    if (hasattr(config, "workerinput") or not hasattr(option, "numprocesses")
            or option.numprocesses is not None or option.collectonly
            or getattr(option, "usepdb", False)):
        return
    marks = getattr(option, "markexpr", "") or ""
    without_docker = bool(marks) and "docker" not in marks
    option.numprocesses = PROCESSES_WITHOUT_DOCKER if without_docker else DEFAULT_PROCESSES


def pytest_configure(config: pytest.Config) -> None:
    from tests import timing
    timing.start()
    # the run's first process (not the YARN tier's run on an edge host, which shares
    # the checkout): nothing recorded yet
    if not hasattr(config, "workerinput") and yarn_test_cluster() != "given":
        (artifacts_dir() / timing.CLUSTER_CPU_FILE).unlink(missing_ok=True)
    for tier, what in TIERS.items():
        config.addinivalue_line("markers", f"{tier}: {what}")
    config.addinivalue_line("markers", "alone: a YARN tier test that changes or measures the "
                            "whole cluster; it runs after the others, with no other application")
    yarn_tier = ROOT / "tests" / "yarn"
    named = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    if yarn_test_cluster() == "docker" and any(p == yarn_tier or yarn_tier in p.parents for p in named):
        raise pytest.UsageError(
            "tests/yarn runs on the dockerised cluster's edge host by default. Fix: run "
            "`pytest tests/docker/test_yarn_tier.py -k NAME`, or set YARNFLOW_TEST_CLUSTER=native "
            "to run it on docker-hadoop/native here")


# The docker tier's three clusters, side by side (docker-hadoop/docker/cluster with
# YARNFLOW_CLUSTER_NAME: each its own engine, hosts of the same names), each with the
# modules it runs, in order, one after another: a host fault must not overlap another
# module's applications on its cluster. On the default one, its first checks, then
# the ship-environment benchmark, whose first submission measures a cold start
# (nothing packed, nothing localized) that a fresh cluster gives it for free, then
# the YARN tier and TPC-H on YARN; on "faults", the host faults and lost hosts; on SECURE_CLUSTER,
# started in Hadoop's secure mode, the compose test (which needs only an engine with
# the images), the secure module, then streaming on YARN (its host faults after every
# other application there). Each takes 20-30 minutes of a full run.
DOCKER_CLUSTERS = {
    "": ("test_hosts.py", "test_ship_environment.py", "test_yarn_tier.py", "test_tpch_on_yarn.py"),
    "faults": ("test_host_faults.py", "test_lost_hosts.py"),
    "secure": ("test_compose.py", "test_yarn_tier_secure.py", "test_streaming_on_yarn.py"),
}
SECURE_CLUSTER = "secure"
DOCKER_ORDER = tuple(m for modules in DOCKER_CLUSTERS.values() for m in modules)


def docker_cluster_of(path: Path) -> str:
    """The name of the cluster a docker module runs on (DOCKER_CLUSTERS)."""
    return next((name for name, modules in DOCKER_CLUSTERS.items() if path.name in modules), "")


# Modules whose tests share no module fixture and are long (each test a cluster of its
# own): their tests go to whichever worker is free, not all to one (test_failover.py
# alone was 5 of the 8 minutes `-m "unit or integration"` may take; test_adaptive_batch.py
# held one worker for 3 of them, test_lost_messages.py for 2).
SPLIT_BY_TEST = ("tests/integration/test_failover.py", "tests/integration/test_benchmarks.py",
                 "tests/integration/test_adaptive_batch.py",
                 "tests/integration/test_lost_messages.py")


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """With pytest-xdist (`-n 4`): each dockerised cluster's modules on one worker, in
    their order (host faults must not overlap other applications on their cluster),
    while the other workers take the rest file by file, then whatever is left when a
    cluster's modules are done. The docker tier mostly waits on hosts and YARN, so the
    unit and integration tiers run in its idle time. Scopes go out in collection order
    (the docker tier's first), not largest first: a cluster's scope must start at once,
    not after the integration tier's big modules."""
    from xdist.scheduler import LoadScopeScheduling

    class TierScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            if nodeid.startswith("tests/docker/"):
                return f"tests/docker#{docker_cluster_of(Path(module))}"
            return nodeid if module in SPLIT_BY_TEST else module

    config.option.loadscopereorder = False
    return TierScheduling(config, log)


# A docker-tier test's time limit, its fixtures' included: the first test on a cluster
# starts it, and from an empty cache that waits for the image build (5-6 min on 2
# cores), a copy into its engine (2 min) and a cold first job (5 min), past the
# command line's 900 s (the faults cluster's first test set up for over 900 s).
DOCKER_TEST_TIMEOUT_S = 1800


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test is marked with its folder's tier; the docker tier's modules run in
    DOCKER_ORDER, each test with at least DOCKER_TEST_TIMEOUT_S."""
    rank = {name: i for i, name in enumerate(DOCKER_ORDER)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank))
               if item.path.parent.name == "docker" else len(rank))
    for item in items:
        parts = item.path.relative_to(ROOT).parts
        if len(parts) > 2 and parts[0] == "tests" and parts[1] in TIERS:
            item.add_marker(parts[1])
        if parts[:2] == ("tests", "docker") and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DOCKER_TEST_TIMEOUT_S))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.timing import report
    report(terminalreporter, artifacts_dir())


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/yarn is collected here unless it runs on the dockerised cluster's edge host."""
    if collection_path == ROOT / "tests" / "yarn" and yarn_test_cluster() == "docker":
        return True
    return None


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's wheel, built once per run (what `pip install .` installs)."""
    from tests.packaging import build_wheel
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Kafka broker (KRaft) on loopback for this test process, as ``host:port``:
    ``docker-hadoop/kafka/broker`` starts it (its jars fetched once from Maven Central),
    waits until it is ready, and stops it when the process ends, however it ends.
    ``YARNFLOW_TEST_KAFKA`` names one that is up instead."""
    given = os.environ.get("YARNFLOW_TEST_KAFKA")
    if given:
        yield given
        return
    import subprocess
    import sys
    state = tmp_path_factory.mktemp("kafka")
    script = ROOT / "docker-hadoop" / "kafka" / "broker"
    started = subprocess.run([sys.executable, str(script), "up", "--dir", str(state),
                              "--stop-with", str(os.getpid())],
                             capture_output=True, text=True, timeout=900)
    if started.returncode != 0:
        pytest.fail(f"the test Kafka broker did not start: {started.stderr.strip()[-2000:]}")
    address = started.stdout.strip().rsplit("=", 1)[-1]
    try:
        yield address
    finally:
        subprocess.run([sys.executable, str(script), "down", "--dir", str(state)],
                       capture_output=True, timeout=120)


@pytest.fixture
def fast_config() -> Configuration:
    return Configuration.load(overrides=FAST)


def wait_until(condition: Callable[[], object], timeout: float, what: str,
               interval: float = 0.05) -> object:
    """Poll ``condition`` until it is truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def executor_logs(log_dir: Path, lines: int = 60) -> str:
    """The last ``lines`` of every executor log under ``log_dir``, for an assertion's
    message: CI keeps no files, so a failure must carry its evidence."""
    parts = []
    for log in sorted(log_dir.rglob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        parts.append(f"\n--- {log.name} (last {len(tail)} lines) ---\n" + "\n".join(tail))
    return "".join(parts)


ROOT = Path(__file__).resolve().parents[1]


def artifacts_dir() -> Path:
    """Where tests leave what a person looks at afterwards (screenshots):
    ``$YARNFLOW_TEST_ARTIFACTS``, else ``test-artifacts/`` in the checkout."""
    path = Path(os.environ.get("YARNFLOW_TEST_ARTIFACTS") or ROOT / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def debian_command(command: str, package: str, why: str) -> str:
    """``command`` on PATH, installed from Debian's ``package`` with apt-get on a fresh
    machine (the suite runs as root in CI); a clear failure where that is impossible."""
    import shutil
    import subprocess
    found = shutil.which(command)
    if found:
        return found
    if not shutil.which("apt-get"):
        pytest.fail(f"{why} need `{command}` and this machine has no apt-get. "
                    f"Fix: install {package} so `{command}` is on PATH")
    env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    # tests side by side (and the docker tier's `cluster up`) may install at once: the
    # later one waits for dpkg's lock instead of failing on it
    wait = ["-o", "DPkg::Lock::Timeout=600"]
    install = ["apt-get", *wait, "install", "-y", "--no-install-recommends", package]
    if subprocess.run(install, env=env, capture_output=True, timeout=900).returncode != 0:
        subprocess.run(["apt-get", *wait, "update"], env=env, capture_output=True, timeout=900)
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.fail(f"could not install {package} with apt-get (it needs root): "
                        + done.stderr.strip()[-500:])
    return shutil.which(command) or pytest.fail(f"apt-get installed no `{command}` command")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's headless Chromium."""
    return debian_command("chromium", "chromium", "the web UI tests")


def browse(chromium: str, url: str, screenshot: Path | None = None,
           budget_ms: int = 10_000) -> str:
    """The page's DOM after its scripts ran (Chromium's virtual time runs
    ``budget_ms``, paused while a request is in flight), and a screenshot of it."""
    import subprocess
    import tempfile
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", f"--virtual-time-budget={budget_ms}",
             "--window-size=1500,1100"]
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        flags.append(f"--user-data-dir={profile}")
        dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True,
                             timeout=120)
        if screenshot is not None:
            subprocess.run([*flags, f"--screenshot={screenshot}", url], capture_output=True,
                           timeout=120)
    assert dom.returncode == 0, f"chromium failed on {url}: {dom.stderr[-1000:]}"
    return dom.stdout
