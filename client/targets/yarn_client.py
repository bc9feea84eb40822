"""Talking to YARN through Skein, for both YARN targets: Skein's client and driver,
deadlines on every call that may hang on an unreachable ResourceManager, the Hadoop
configuration a job is prepared with, and the TaskExecutor services both kinds of
application declare (one Skein service per container size).

How Python reaches the nodes is ``node_python``'s part.
"""
from __future__ import annotations

import getpass
import json
import os
import shutil
import threading
import warnings
from typing import Any, Callable, TypeVar

from yarnflow.conf import Configuration, options
from yarnflow.core.bounded import CallTimedOut, call_within
from yarnflow.core.contract import encode, service_name
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.client.filesystems import use_cluster_filesystem
from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.client.targets.acls import application_acls
from yarnflow.core.hadoop_conf import HadoopConf, HadoopConfigError
from yarnflow.client.targets.kerberos import KerberosLogin, cluster_user, kerberos_login
from yarnflow.client.targets.node_python import NodePython
from yarnflow.client.targets.yarn_errors import YarnError

T = TypeVar("T")
# This process's private Skein drivers, by the keytab login they were started with.
_DRIVERS: dict[tuple[tuple[str, str], ...], Any] = {}
_DRIVERS_LOCK = threading.Lock()


def bounded(call: Callable[[], T], timeout: float, what: str) -> T:
    """Run a call that may block on an unreachable ResourceManager, with a deadline
    (Hadoop's client retries for minutes without a word)."""
    try:
        return call_within(call, timeout, what)
    except CallTimedOut as err:
        raise YarnError(f"{err} (yarn.client.timeout): is YARN's ResourceManager up and "
                        "HADOOP_CONF_DIR pointing at it?") from None


def skein_client(timeout: float, login: KerberosLogin | None = None) -> Any:
    """A Skein client: through the user's global Skein driver when one runs (`skein
    driver start`, as Skein's own CLI does; saves starting a JVM per command), else
    through this process's private driver, logging to ~/.yarnflow and logged in with
    ``login``'s keytab where it has one (on a Kerberos cluster; otherwise from the
    ticket cache).

    The client belongs to the process: callers never close it. A private driver is a
    JVM that takes seconds and 4-5 CPU-s to start, and an attached run asks YARN about
    its application every half second for as long as the job runs; one driver per
    process (per keytab login) serves all of it, and stops when the process exits
    (Skein's driver ends when its parent's pipe closes). Without a ``login`` any
    driver the process has will do: it acts for the same user."""
    import skein
    # Skein writes its own TLS credentials under ~/.skein the first time, and says so
    # as a UserWarning: noise, beside the one line a refused command prints
    warnings.filterwarnings("ignore", message="Skein global security credentials not found",
                            category=UserWarning)
    try:
        return bounded(skein.Client.from_global_driver, timeout, "connecting to Skein's driver")
    except (skein.exceptions.DriverNotRunningError, skein.exceptions.ConnectionError):
        pass
    args = login.skein_args() if login is not None else {}
    key = tuple(sorted(args.items()))
    with _DRIVERS_LOCK:
        for held, client in list(_DRIVERS.items()):
            if client._proc is None or client._proc.poll() is not None:
                del _DRIVERS[held]          # its driver died: start another below
            elif held == key or login is None:
                return client
        check_driver_prerequisites(timeout)
        log = ApplicationStore().root / "skein-driver.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        client = bounded(lambda: skein.Client(log=str(log), **args), timeout,
                         "starting Skein's driver")
        _DRIVERS[key] = client
        return client


def application_ended(application_id: str, config: Configuration) -> bool:
    """Whether YARN reports the application FINISHED, FAILED or KILLED; False when it
    cannot say (then a crashed job's lease lapses in time instead)."""
    timeout = config.get(options.YARN_CLIENT_TIMEOUT)
    try:
        client = skein_client(timeout, client_login(config))
        report = bounded(lambda: client.application_report(application_id), timeout,
                         f"asking YARN about {application_id}")
    except Exception:  # noqa: BLE001 - unknown to YARN, or YARN unreachable: not ended
        return False
    return str(report.state) in ("FINISHED", "FAILED", "KILLED")


def check_driver_prerequisites(timeout: float) -> None:
    """What Skein needs to start its driver, checked first so that a missing piece is
    one line naming it: Skein would fail with a raw FileNotFoundError (no `yarn` or
    `java`), or wait minutes on a ResourceManager that is not there."""
    reachable_hadoop_conf(timeout)
    if shutil.which("yarn") is None:
        raise YarnError("the `yarn` command is not on PATH; Skein asks it for Hadoop's classpath. "
                        "Fix: add your Hadoop installation's bin directory to PATH (e.g. "
                        "export PATH=$HADOOP_HOME/bin:$PATH)")
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else "java"
    if shutil.which(java) is None:
        where = f"JAVA_HOME ({java_home}) has no bin/java" if java_home else \
            "`java` is not on PATH and JAVA_HOME is unset"
        raise YarnError(f"{where}; Skein's driver runs on Java. Fix: install Java 8 or later "
                        "and set JAVA_HOME to it")


def client_login(config: Configuration) -> KerberosLogin | None:
    """How this client logs in to the configured cluster (None: it has no Kerberos)."""
    return kerberos_login(config, load_hadoop_conf(config))


def cluster_acls(config: Configuration) -> Any:
    """The application's Skein ACLs on the configured cluster (targets/acls.py)."""
    hadoop = load_hadoop_conf(config)
    owner = cluster_user(config) if hadoop.kerberos else ""
    return application_acls(config, hadoop.kerberos, hadoop.admin_acl, owner)


def load_hadoop_conf(config: Configuration) -> HadoopConf:
    return reachable_hadoop_conf(config.get(options.YARN_CLIENT_TIMEOUT))


def reachable_hadoop_conf(timeout: float) -> HadoopConf:
    """The Hadoop configuration, once its ResourceManager answers; a ``YarnError``
    naming the fix otherwise."""
    try:
        hadoop = HadoopConf.load()
        hadoop.check_rm_reachable(timeout)
    except HadoopConfigError as err:
        raise YarnError(str(err)) from None
    return hadoop


def prepare_config(config: Configuration) -> Configuration:
    """The configuration the job is validated with and the ApplicationMaster gets: the
    largest container is what YARN's scheduler grants."""
    if config.get(options.YARN_ATTEMPT_FAILURES_VALIDITY_INTERVAL):
        # refused, not ignored: a user who sets it counts on old failures being forgotten
        raise YarnError(f"{options.YARN_ATTEMPT_FAILURES_VALIDITY_INTERVAL.key} cannot be applied: Skein "
                        "0.8.2 submits applications without it, so YARN would count every failed "
                        "attempt. Fix: remove the option and size yarn.application-attempts for the "
                        "application's whole life")
    hadoop = load_hadoop_conf(config)
    kerberos_login(config, hadoop)    # no credentials for a secure cluster: refused here
    config = config.for_target("yarn-per-job")
    max_mb, max_vcores = hadoop.max_allocation
    config.set(options.MAX_WORKER_MEMORY, max_mb)
    config.set(options.MAX_WORKER_CPU, max_vcores)
    # YARN silently grants no more attempts than its own maximum: say the real number
    config.set(options.YARN_APPLICATION_ATTEMPTS,
               min(config.get(options.YARN_APPLICATION_ATTEMPTS), hadoop.max_am_attempts))
    use_cluster_filesystem(config, hadoop)   # a path without a scheme is on fs.defaultFS
    if not config.get(options.CHECKPOINTS_DIR):   # a streaming job's, in the user's home there
        user = (cluster_user(config) if hadoop.kerberos else "") or getpass.getuser()
        config.set(options.CHECKPOINTS_DIR, f"/user/{user}/.yarnflow/checkpoints")
    return config


def worker_hosts(client: Any, config: Configuration, labels: dict[str, str] | None = None
                 ) -> list[str]:
    """The hosts of YARN's running NodeManagers, where executors may be asked to run
    (none when there are more than yarn.locality.max-hosts: a service per host and
    container size would make the application's spec too large to be worth it).
    ``labels``, node label -> what asks for it: each must be a label some running
    NodeManager has, or the submission is refused naming the labels there are."""
    limit = config.get(options.YARN_LOCALITY_MAX_HOSTS)
    if limit <= 0 and not labels:
        return []
    nodes = bounded(lambda: client.get_nodes(states=["RUNNING"]), config.get(
        options.YARN_CLIENT_TIMEOUT), "listing YARN's NodeManagers")
    check_node_labels(nodes, labels or {})
    hosts = sorted({node.id.rsplit(":", 1)[0] for node in nodes})
    return hosts if 0 < len(hosts) <= limit else []


def check_node_labels(nodes: list[Any], wanted: dict[str, str]) -> None:
    """A label no running NodeManager has would leave its containers pending for ever
    (YARN accepts the request): refuse it before submitting."""
    have = sorted({label for node in nodes for label in node.labels})
    for label, who in wanted.items():
        if label not in have:
            raise YarnError(
                f"{who} names node label {label!r}, which no running NodeManager of this "
                f"cluster has (its labels: {', '.join(have) or 'none'}); fix: name one of "
                "those, or have the cluster's administrator label hosts with it "
                "(yarn rmadmin -replaceLabelsOnNode)")


def executor_node_label(config: Configuration) -> str:
    """The node label of executors whose slot profile names none."""
    return config.get(options.YARN_TM_NODE_LABEL) or config.get(options.YARN_APP_NODE_LABEL)


def configured_node_labels(config: Configuration) -> dict[str, str]:
    """The node labels the configuration asks for, each with its option's name."""
    return {config.get(o): o.key for o in (options.YARN_TM_NODE_LABEL, options.YARN_APP_NODE_LABEL)
            if config.get(o)}


def container_services(specs: list[WorkerSpec], instances: dict[str, int], node: NodePython,
                       env: dict[str, str], hosts: list[str], default_label: str = "",
                       anywhere_only: frozenset[str] = frozenset()) -> tuple[dict[str, Any], str]:
    """The Skein services of the container sizes, and their plan as the ApplicationMaster
    reads it ($YARNFLOW_SERVICES): per size, one service anywhere (with the containers
    to start with) and one on each of ``hosts`` (strictly there, none to start with),
    for executors asked where their input is stored (drivers/yarn.py). A size in a node
    label's partition (its profile's, else ``default_label``) has no per-host services:
    YARN takes a node label only on a request for any host; nor does one of
    ``anywhere_only`` (the sizes adaptive execution may give a stage after an exchange,
    which reads no input split: seven sizes on a hundred hosts would be 700 services)."""
    services: dict[str, Any] = {}
    plan = []
    for spec in specs:
        name = service_name(spec)
        label = spec.slot_profile.node_label or default_label
        services[name] = taskexecutor_service(spec, instances.get(spec.name, 0), node, env,
                                              node_label=label)
        on_hosts = {} if label or spec.name in anywhere_only else \
            {host: f"{name}-h{i}" for i, host in enumerate(hosts)}
        for host, on_host in on_hosts.items():
            services[on_host] = taskexecutor_service(spec, 0, node, env, host)
        plan.append({"service": name, "slot_cpu": spec.slot_profile.cpu,
                     "slot_memory_mb": spec.slot_profile.memory_mb,
                     "slot_node_label": spec.slot_profile.node_label, "num_slots": spec.num_slots,
                     "overhead_mb": spec.overhead_mb, "instances": instances.get(spec.name, 0),
                     "hosts": on_hosts})
    return services, encode(json.dumps(plan).encode())


def taskexecutor_service(spec: WorkerSpec, instances: int, node: NodePython,
                         env: dict[str, str], host: str = "", node_label: str = "") -> Any:
    """One container size (on ``host``, or anywhere in ``node_label``'s partition): a
    Skein service whose containers run a TaskExecutor. Skein neither restarts nor gives
    up on them; the ResourceManager decides."""
    import skein
    return skein.Service(
        resources=skein.Resources(memory=spec.container.memory_mb, vcores=spec.vcores),
        nodes=[host] if host else None, relax_locality=False, node_label=node_label,
        instances=instances, max_restarts=0, allow_failures=True, files=dict(node.files), env=env,
        script=node.script(f"yarnflow.taskexecutor --yarn --slots {spec.num_slots} "
                           f"--slot-cpu {spec.slot_profile.cpu:g} "
                           f"--slot-memory {spec.slot_profile.memory_mb} --worker-spec {spec.name}"
                           + (f" --slot-node-label {spec.slot_profile.node_label}"
                              if spec.slot_profile.node_label else "")))
