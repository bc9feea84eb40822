"""``yarn-session`` from the client: start a session application, find it by id or
name, talk to its Dispatcher, stop it.

A session is one long-running Skein application: its master runs
``python -m yarnflow.appmaster --session`` and it declares one TaskExecutor service
per size of ``session.container-sizes``. The client keeps the session's certificate
(the only way into its mutual-TLS Dispatcher) and, once the Dispatcher answered, its
address in the application store, so submitting a job is one gRPC call: no JVM
(Skein's driver) on that path. Skein's key-value store is the fallback.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from yarnflow.client.targets.appmaster_conf import appmaster_conf
from yarnflow.core.clock import poll_until
from yarnflow.conf import ConfigError, Configuration, options
from yarnflow.core.appmaster_size import MINIMUM_MB
from yarnflow.core.container_ladder import ContainerLadder, parse_container_sizes
from yarnflow.core.contract import (APPMASTER_ADDRESS_KEY, CONF_ENV, SERVICES_ENV, encode)
from yarnflow.core.jobgraph import JobGraph
from yarnflow.rpc.security import generate_application_credentials
from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.client.targets.base import JobHandle, Target
from yarnflow.client.targets.dispatcher_client import DispatcherClient
from yarnflow.client.targets.history import history_location
from yarnflow.client.targets.kerberos import KerberosLogin
from yarnflow.client.targets.node_python import node_python
from yarnflow.client.targets.yarn_client import (application_ended, bounded, client_login, cluster_acls,
                                          configured_node_labels,
                                          container_services, executor_node_label,
                                          prepare_config, skein_client, worker_hosts)
from yarnflow.client.targets.yarn_errors import YarnError
from yarnflow.client.targets.yarn_job import YarnJobHandle

SESSION_TAG = "yarnflow-session"
DEFAULT_NAME = "yarnflow-session"


@dataclass
class SessionStarted:
    app_id: str
    name: str
    tracking_url: str
    dispatcher: str
    history_dir: str
    container_sizes: str


def session_ladder(config: Configuration) -> ContainerLadder:
    try:
        return ContainerLadder(parse_container_sizes(config.get(options.SESSION_CONTAINER_SIZES)),
                               config.get(options.WORKER_OVERHEAD_MEMORY))
    except ValueError as err:
        raise ConfigError(f"session.container-sizes: {err}") from None


def check_ladder_fits_yarn(ladder: ContainerLadder, config: Configuration) -> None:
    max_mb, max_vcores = config.get(options.MAX_WORKER_MEMORY), config.get(options.MAX_WORKER_CPU)
    for spec in ladder.specs:
        if spec.container.memory_mb > max_mb or spec.vcores > max_vcores:
            raise YarnError(
                f"session container size {spec.container.label()} is larger than YARN grants "
                f"(yarn.scheduler.maximum-allocation-mb={max_mb}, "
                f"yarn.scheduler.maximum-allocation-vcores={max_vcores:g}); fix: drop it from "
                "session.container-sizes")


def build_session_spec(config: Configuration, name: str, ladder: ContainerLadder,
                       min_executors: int, security: Any, hosts: list[str],
                       login: KerberosLogin | None = None, acls: Any = None) -> Any:
    """Warm executors to start with are of the smallest size: a job that needs more
    gets its own containers, and they are released again when idle. ``hosts``: the
    worker hosts executors may be asked on (yarn_client.worker_hosts)."""
    import skein
    node = node_python(config)
    env = {"PYTHONUNBUFFERED": "1", CONF_ENV: encode(config.to_json().encode())}
    instances = {ladder.specs[0].name: min_executors}
    services, plan = container_services(ladder.specs, instances, node, env, hosts,
                                        executor_node_label(config))
    conf_files, conf_env = appmaster_conf(config)
    master = skein.Master(
        resources=skein.Resources(memory=config.get(options.JOBMANAGER_PROCESS_MEMORY) or MINIMUM_MB,
                                  vcores=config.get(options.YARN_AM_VCORES)),
        files={**node.files, **conf_files, **(login.appmaster_files() if login else {})},
        env={**env, **conf_env, SERVICES_ENV: plan},
        security=security, script=node.script("yarnflow.appmaster --session"))
    return skein.ApplicationSpec(name=name, queue=config.get(options.YARN_QUEUE), master=master,
                                 node_label=config.get(options.YARN_APP_NODE_LABEL),
                                 services=services, tags=["yarnflow", SESSION_TAG],
                                 acls=acls or skein.ACLs(),
                                 max_attempts=config.get(options.YARN_APPLICATION_ATTEMPTS))


def start_session(config: Configuration, name: str | None, min_executors: int) -> SessionStarted:
    """Submit the session and wait (``session.start-timeout``) until its Dispatcher
    answers; returns its application id and Dispatcher address."""
    config = prepare_config(config)
    ladder = session_ladder(config)
    check_ladder_fits_yarn(ladder, config)
    name = name or DEFAULT_NAME
    history = history_location(config)
    config.set(options.SESSION_HISTORY_DIR, history)
    config.set(options.SESSION_MIN_EXECUTORS, min_executors)
    timeout = config.get(options.YARN_CLIENT_TIMEOUT)
    import skein
    credentials = generate_application_credentials()
    security = skein.Security(cert_bytes=credentials.cert_pem, key_bytes=credentials.key_pem)
    store = ApplicationStore()
    login = client_login(config)
    client = skein_client(timeout, login)
    spec = build_session_spec(config, name, ladder, min_executors, security,
                              worker_hosts(client, config, configured_node_labels(config)),
                              login, cluster_acls(config))
    app_id = bounded(lambda: client.submit(spec), timeout, "submitting the session to YARN")
    store.save(app_id, credentials, {"kind": "session", "name": name, "history_dir": history,
                                     "container_sizes": ladder.describe(),
                                     "min_executors": min_executors, "submitted": time.time()})
    address, tracking_url = _wait_for_dispatcher(client, app_id, security, timeout,
                                                 config.get(options.SESSION_START_TIMEOUT))
    store.update(app_id, dispatcher=address, tracking_url=tracking_url)
    with DispatcherClient(app_id, timeout, store) as dispatcher:
        dispatcher.overview()                             # it answers over our certificate
    return SessionStarted(app_id, name, tracking_url, address, history, ladder.describe())


def _wait_for_dispatcher(client: Any, app_id: str, security: Any, timeout: float,
                         start_timeout: float) -> tuple[str, str]:
    app = None

    def published() -> tuple[str, str] | None:
        nonlocal app
        report = bounded(lambda: client.application_report(app_id), timeout,
                         f"asking YARN about {app_id}")
        state = str(report.state)
        if state in ("FINISHED", "FAILED", "KILLED"):
            raise YarnError(f"session {app_id} ended {state} while starting: "
                            f"{(report.diagnostics or '').strip()[-2000:]}; see `yarnflow logs {app_id}`")
        if state == "RUNNING":
            import skein
            try:
                if app is None:
                    app = bounded(lambda: client.connect(app_id, wait=False, security=security),
                                  timeout, f"connecting to {app_id}'s ApplicationMaster")
                address = app.kv.get(APPMASTER_ADDRESS_KEY)
            except skein.exceptions.ConnectionError:
                # RUNNING in YARN's report, but its ApplicationMaster does not answer (yet,
                # or any more): the next report says which, within session.start-timeout
                app = None
                return None
            if address is not None:
                return address.decode(), report.tracking_url or ""
        return None
    found = poll_until(published, start_timeout, 0.2)
    if found is None:
        raise YarnError(f"session {app_id} has no Dispatcher after {start_timeout:g} s "
                        f"(session.start-timeout); it is still in YARN: inspect it with "
                        f"`yarnflow logs {app_id}`, stop it with `yarnflow session stop {app_id}`")
    return found


class YarnSessionTarget(Target):
    """Jobs go to a running session's Dispatcher: one gRPC call, no JVM on that path."""
    name = "yarn-session"

    def __init__(self, config: Configuration) -> None:
        super().__init__(prepare_config(config))
        self.attached = self.config.get(options.ATTACHED)

    def application_ended(self, application_id: str) -> bool:
        return application_ended(application_id, self.config)

    def submit(self, graph: JobGraph) -> JobHandle:
        timeout = self.config.get(options.YARN_CLIENT_TIMEOUT)
        store = ApplicationStore()
        app_id = resolve_session(self.config.get(options.YARN_APPLICATION_ID), timeout, store)
        with DispatcherClient(app_id, timeout, store) as dispatcher:
            job_id = dispatcher.submit(graph)
        store.remember_job(job_id, app_id)
        info = store.info(app_id)
        return YarnJobHandle(app_id, job_id, timeout, info.get("tracking_url", ""),
                             history_dir=info.get("history_dir", ""), store=store)

    def submitted(self, handle: JobHandle) -> list[str]:
        lines = [f"job [bold]{handle.job_id}[/] accepted by session {handle.application_id}"]
        if not self.attached:
            lines.append(f"follow it with: yarnflow status {handle.job_id}")
        return lines


def resolve_session(ref: str, timeout: float, store: ApplicationStore | None = None) -> str:
    """An application id as given; a name (or nothing) -> the newest session started
    from this account under that name (any name) whose Dispatcher answers."""
    if ref.startswith("application_"):
        return ref
    store = store or ApplicationStore()
    candidates = [(app_id, info) for app_id, info in store.sessions()
                  if not ref or info.get("name") == ref]
    for app_id, _ in candidates:
        try:
            with DispatcherClient(app_id, min(timeout, 5.0), store) as session:
                session.overview()
            return app_id
        except (YarnError, KeyError):
            continue
    what = f"named '{ref}'" if ref else "at all"
    raise YarnError(f"no running yarnflow session {what} started from this account"
                    + (f" (ended: {', '.join(a for a, _ in candidates[:5])})" if candidates else "")
                    + f"; start one with `yarnflow session start{' --name ' + ref if ref else ''}`, "
                    "or name one with -a APP_ID")


def list_sessions(timeout: float) -> list[Any]:
    """YARN's reports of the running (or starting) yarnflow sessions, anyone's."""
    client = skein_client(timeout)
    reports = bounded(lambda: client.get_applications(states=["ACCEPTED", "RUNNING"]),
                      timeout, "listing YARN applications")
    return [r for r in reports if SESSION_TAG in (r.tags or ())]


def stop_session(app_id: str, timeout: float, wait: float) -> Any:
    """Ask the Dispatcher to stop (running jobs are cancelled and archived); if it cannot
    be reached, have YARN kill the application. Returns YARN's final status."""
    from yarnflow.client.targets.yarn_apps import YarnApplication
    store = ApplicationStore()
    with YarnApplication(app_id, timeout, store) as app:
        if app.status(with_details=False).finished:
            return app.status(with_details=False)
        try:
            with DispatcherClient(app_id, timeout, store) as session:
                session.shutdown("stopped with `yarnflow session stop`")
        except (YarnError, KeyError):
            app.kill()
        return app.wait_finished(wait)
