"""The ApplicationMaster on YARN, run by Skein's master script:

    python -m yarnflow.appmaster [--job job.pb]     (per-job mode)
    python -m yarnflow.appmaster --session          (session mode: see yarn_session.py)

The configuration and the container-size plan come in the launch environment, and
so does the serialized JobGraph (user code inside it as cloudpickle bytes) unless it
is too big for it; then it is localized as ``job.pb``.

It hosts the ResourceManager (with the YARN driver) and the job's JobMaster on one
mutual-TLS gRPC server, publishes that server's address in Skein's key-value store
for TaskExecutors and clients, runs the job, and ends the YARN application with the
job's outcome: SUCCEEDED, FAILED with the failure's summary, or KILLED when
cancelled. Skein ends the application when this process exits, so it exits only
after telling Skein the final status.

YARN may run the ApplicationMaster more than once (``yarn.application-attempts``):
when this process dies, Skein (which runs it) fails the attempt and YARN starts the
next, which finds the JobGraph and configuration where the first did and runs the job
again under the same job id; the sinks' setup clears what the dead attempt had staged.
A job that already ended is not run again (``ended_in_an_earlier_attempt``).
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from yarnflow.appmaster.attempt_fence import AttemptFence, exit_when_replaced
from yarnflow.appmaster.jobmaster.job_events import partition_store_dir
from yarnflow.core.fs import open_filesystem
from yarnflow.core.ids import JobID, ResourceID
from yarnflow.appmaster.components import ApplicationMasterComponents
from yarnflow.appmaster.dispatcher import Dispatcher
from yarnflow.core.fs.tokens import CREDENTIALS
from yarnflow.core.history import archived_job, open_archive
from yarnflow.rpc.codec import JOB_DETAILS
from yarnflow.appmaster.dispatcher.service import add_dispatcher_service
from yarnflow.appmaster.gc_tuning import tune_garbage_collector
from yarnflow.core.details import JobDetails
from yarnflow.appmaster.resourcemanager.delegation_tokens import (KeytabTokenProvider,
                                                                  obtain_before_start)
from yarnflow.appmaster.resourcemanager.drivers.yarn import YarnDriver
from yarnflow.appmaster.resourcemanager.drivers.yarn_nodes import node_reports_from_conf
from yarnflow.core.container_ladder import ContainerLadder
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.conf import Configuration, options
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import JobStatus
from yarnflow.rpc.codec import jobgraph_as_received
from yarnflow.rpc.security import read_skein_container_credentials
from yarnflow.appmaster.webmonitor import ApplicationMasterSource, WebMonitorServer
from yarnflow.core.contract import (APPMASTER_ADDRESS_KEY, CONF_ENV, JOB_ENV, JOB_ID_KEY, KEYTAB_FILE,
                                    SERVICES_ENV, WEB_PAGE_ROUTE, decode_env)

log = logging.getLogger("yarnflow.appmaster")

# How often an attempt looks for a newer one's claim (attempt_fence.py).
REPLACED_CHECK_S = 5.0
# YARN keeps diagnostics in the ResourceManager's memory; keep ours short.
_DIAGNOSTICS_LIMIT = 4000
FINAL_STATUS = {JobStatus.FINISHED: "SUCCEEDED", JobStatus.FAILED: "FAILED",
                JobStatus.CANCELED: "KILLED"}


def application_attempt(container_id: str | None = None) -> int:
    """This ApplicationMaster's attempt number, from YARN's id of its container
    (``container[_e<epoch>]_<cluster>_<app>_<attempt>_<container>``); 1 outside YARN."""
    container_id = container_id if container_id is not None else os.environ.get("CONTAINER_ID", "")
    parts = container_id.split("_")
    try:
        return int(parts[-2]) if len(parts) >= 5 else 1
    except ValueError:
        return 1


def attempt_fence(config: Configuration) -> AttemptFence:
    """This attempt's claim on the application, beside the jobs' stored results:
    ``<execution.batch.partition-store.dir>/.attempts/<application id>/``."""
    settings = options.filesystem_settings(config)
    root = settings.resolve(partition_store_dir(config)).rstrip("/")
    directory = f"{root}/.attempts/{os.environ.get('SKEIN_APPLICATION_ID', 'unknown')}"
    return AttemptFence(open_filesystem(directory, settings), directory, application_attempt())


def configure_logging() -> Path:
    """Log into the container's log directory, where `yarnflow logs` and YARN's log
    aggregation find it."""
    log_dir = Path((os.environ.get("LOG_DIRS") or ".").split(",")[0])
    log_file = log_dir / "appmaster.log"
    logging.basicConfig(level=logging.INFO, filename=str(log_file),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # `kill -USR1 <pid>` writes every thread's stack to the log, like jstack: the one
    # way to see where an ApplicationMaster that went silent is stuck.
    faulthandler.register(signal.SIGUSR1, file=open(log_file, "a"), all_threads=True)
    return log_file


@dataclass
class ServicesPlan:
    """The container sizes the client declared as Skein services ($YARNFLOW_SERVICES):
    each size's service, its service on each worker host, and the containers Skein
    requests at start (``instances``; ids ``<service>_<i>``)."""
    specs: dict[ResourceSpec, WorkerSpec]
    services: dict[str, str]
    host_services: dict[tuple[str, str], str]
    starting: list[tuple[ResourceID, WorkerSpec]]


def load_worker_specs(plan: bytes) -> ServicesPlan:
    loaded = ServicesPlan({}, {}, {}, [])
    for entry in json.loads(plan):
        profile = ResourceSpec(entry["slot_cpu"], entry["slot_memory_mb"],
                               node_label=entry.get("slot_node_label", ""))
        spec = WorkerSpec(profile, entry["num_slots"], entry["overhead_mb"])
        loaded.specs[profile] = spec
        loaded.services[spec.name] = entry["service"]
        for host, service in entry.get("hosts", {}).items():
            loaded.host_services[(spec.name, host)] = service
        loaded.starting += [(ResourceID(f"{entry['service']}_{i}"), spec)
                            for i in range(entry.get("instances", 0))]
    return loaded


def diagnostics_of(result: JobDetails) -> str:
    if result.status is JobStatus.FINISHED:
        return f"yarnflow job {result.job_id} finished"
    text = f"yarnflow job {result.job_id} {result.status.value}: {result.failure}"
    detail = (result.failure_detail or "").strip()
    if detail:
        text += "\n" + detail[-(_DIAGNOSTICS_LIMIT - len(text) - 1):]
    return text[:_DIAGNOSTICS_LIMIT]


def keytab_token_provider(config: Configuration) -> KeytabTokenProvider | None:
    """With the keytab the client shipped (a Kerberos cluster and
    security.kerberos.login.keytab), what obtains new HDFS delegation tokens."""
    if not Path(KEYTAB_FILE).is_file():
        return None
    settings = options.filesystem_settings(config)
    authority = urlsplit(settings.default_fs).netloc
    log.info("a keytab for %s came with the application: it obtains new HDFS delegation "
             "tokens before the current ones end", config.get(options.KERBEROS_PRINCIPAL))
    return KeytabTokenProvider(settings.http_address(authority),
                               config.get(options.KERBEROS_PRINCIPAL), str(Path(KEYTAB_FILE).resolve()),
                               config.get(options.YARN_CLIENT_TIMEOUT))


def start_components(config: Configuration, app: Any, ladder: ContainerLadder | None = None,
                     min_workers: int = 0,
                     register_more: Callable[[ApplicationMasterComponents, Any], None] | None = None,
                     token_provider: KeytabTokenProvider | None = None
                     ) -> ApplicationMasterComponents:
    """The ResourceManager (YARN driver), the JobMaster service and whatever
    ``register_more(components, server)`` adds, on one mutual-TLS server whose address goes to Skein's
    key-value store; containers Skein starts with the application are adopted."""
    plan = load_worker_specs(decode_env(SERVICES_ENV))
    worker_specs, starting = plan.specs, plan.starting
    max_container = options.largest_worker(config)
    keytab = Path(KEYTAB_FILE)
    nodes = node_reports_from_conf(config.get(options.YARN_CLIENT_TIMEOUT),
                                   config.get(options.KERBEROS_PRINCIPAL),
                                   str(keytab.resolve()) if keytab.is_file() else "")
    driver = YarnDriver(config, app, plan.services, max_container, plan.host_services,
                        nodes=nodes)
    reports = driver.node_reports()
    if reports:             # none at all is a ResourceManager that just started: no news
        driver.forget_hosts_not_running(reports)
    fence = attempt_fence(config)
    fence.claim()          # before anything is recovered: from now on an older attempt yields
    exit_when_replaced(fence, REPLACED_CHECK_S)
    tls = read_skein_container_credentials(".")
    host = os.environ.get("NM_HOST", "127.0.0.1")
    components = ApplicationMasterComponents(
        config, driver, tls, bind_host="0.0.0.0", advertised_host=host,
        worker_specs=None if ladder else worker_specs, ladder=ladder, min_workers=min_workers,
        application_attempt=fence.attempt, token_provider=token_provider, fence=fence)
    components.start(None if register_more is None else
                     lambda server: register_more(components, server))
    driver.adopt([resource_id for resource_id, _ in starting])
    rm = components.resource_manager
    for resource_id, spec in starting:
        rm.main.call(rm.slot_manager.add_starting_worker, resource_id, spec, ladder is not None)
    app.kv[APPMASTER_ADDRESS_KEY] = components.address.encode()
    log.info("ApplicationMaster (attempt %d of %d) serving at %s; worker specs: %s",
             components.application_attempt, config.get(options.YARN_APPLICATION_ATTEMPTS),
             components.address, dict(plan.services))
    if plan.host_services:
        hosts = driver.worker_hosts()
        log.info("executors can be asked on %d hosts: %s", len(hosts), ", ".join(sorted(hosts)))
    return components


def serve_web_monitor(config: Configuration, components: ApplicationMasterComponents,
                      dispatcher: Dispatcher, app: Any, mode: str) -> WebMonitorServer:
    """The web UI and REST API, on this host's loopback by default, added to Skein's web
    UI as a page: YARN's tracking URL leads there through the ResourceManager's proxy.
    A page Skein cannot add is logged, not fatal: the job runs without it."""
    source = ApplicationMasterSource(components, dispatcher, mode,
                                     os.environ.get("SKEIN_APPLICATION_ID", ""),
                                     config.get(options.SESSION_HISTORY_DIR))
    server = WebMonitorServer.serve(source, config)
    try:
        app.ui.add_page(WEB_PAGE_ROUTE, server.url.rstrip("/"), link_name="yarnflow")
    except Exception as err:   # noqa: BLE001 - e.g. the route left by an earlier attempt
        log.warning("could not add the web UI to Skein's pages: %s", err)
    return server


def ended_in_an_earlier_attempt(history: str, job_id: JobID,
                                attempt: int | None = None) -> tuple[str, str] | None:
    """The final status and diagnostics of a job an earlier attempt already ran to its
    end (Flink's JobResultStore): such a job is never run again.

    Skein unregisters the application only when it SUCCEEDED or on the last attempt;
    a job that failed or was cancelled in an earlier attempt therefore comes here in the
    next, which ends the application with that outcome. So does a job whose
    ApplicationMaster died between archiving the job and unregistering."""
    attempt = application_attempt() if attempt is None else attempt
    if attempt == 1 or not history:
        return None
    details = archived_job(history, job_id, JOB_DETAILS)
    if details is None or not details.status.is_globally_terminal:
        return None
    log.info("job %s ended %s in an earlier attempt: the application ends with that outcome",
             job_id, details.status.value)
    return FINAL_STATUS.get(details.status, "FAILED"), diagnostics_of(details)


def run(args: argparse.Namespace, app: Any) -> tuple[str, str]:
    """One job, behind a Dispatcher of its own (Flink's MiniDispatcher): the client
    follows and cancels it as it would a session's job, and the Dispatcher archives it
    where the client's summary, ``status`` and ``history`` read it after we are gone."""
    config = Configuration.from_json(decode_env(CONF_ENV).decode())
    job_bytes = Path(args.job).read_bytes() if args.job else decode_env(JOB_ENV)
    graph = jobgraph_as_received(job_bytes)
    provider = keytab_token_provider(config)
    obtain_before_start(provider, CREDENTIALS)
    history = config.get(options.SESSION_HISTORY_DIR)
    ended = ended_in_an_earlier_attempt(history, graph.job_id)
    if ended is not None:
        return ended
    dispatchers: list[Dispatcher] = []

    def serve_dispatcher(components: ApplicationMasterComponents, server: Any) -> None:
        dispatcher = Dispatcher(components, None, open_archive(history, JOB_DETAILS) if history else None)
        add_dispatcher_service(server, dispatcher, lambda reason: dispatcher.cancel_all())
        dispatchers.append(dispatcher)
    components = start_components(config, app, register_more=serve_dispatcher,
                                  token_provider=provider)
    dispatcher = dispatchers[0]
    # The job first, then its page: a page served before the submission (and linked
    # from YARN's tracking URL) would show an application without its job.
    job_id = dispatcher.submit(graph)
    app.kv[JOB_ID_KEY] = job_id.encode()
    web = serve_web_monitor(config, components, dispatcher, app, "yarn-per-job")

    def on_sigterm(*_: object) -> None:   # `yarn application -kill`, or YARN stopping us
        log.warning("SIGTERM: cancelling job %s", job_id)
        threading.Thread(target=dispatcher.cancel_all, daemon=True).start()
    signal.signal(signal.SIGTERM, on_sigterm)

    details = dispatcher.wait(job_id, timeout=None)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # Skein stops us after unregistering
    log.info("job %s ended %s%s", job_id, details.status.value,
             f": {details.failure}" if details.failure else "")
    wait = config.get(options.COLLECT_RESULT_TIMEOUT)
    if not dispatcher.wait_fetched(job_id, wait):
        log.warning("the client did not fetch job %s's collected result within %g s "
                    "(pipeline.collect.result-timeout): it is dropped", job_id, wait)
    dispatcher.close(config.get(options.JOB_CANCEL_TIMEOUT))    # the archive is written
    web.stop()
    components.stop()
    dispatcher.stop()
    return FINAL_STATUS.get(details.status, "FAILED"), diagnostics_of(details)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="yarnflow-appmaster")
    parser.add_argument("--job", help="the serialized JobGraph, when it was too big for "
                        f"${JOB_ENV}")
    parser.add_argument("--session", action="store_true",
                        help="run a session (a Dispatcher taking jobs) instead of one job")
    args = parser.parse_args(argv)
    log_file = configure_logging()
    attempt = application_attempt()
    print(f"yarnflow ApplicationMaster, attempt {attempt}; log: {log_file}", flush=True)
    import skein
    app = skein.ApplicationClient.from_current()
    tune_garbage_collector()
    try:
        if args.session:
            from yarnflow.appmaster.yarn_session import run_session
            status, diagnostics = run_session(app)
        else:
            status, diagnostics = run(args, app)
    except BaseException:   # whatever happened, YARN must hear it
        status, diagnostics = "FAILED", ("yarnflow ApplicationMaster failed:\n"
                                         + traceback.format_exc()[-_DIAGNOSTICS_LIMIT:])
        log.exception("ApplicationMaster failed")
    log.info("ending the application %s", status)
    logging.shutdown()
    app.shutdown(status, diagnostics)
    # Skein stops this process once it has unregistered; do not linger in
    # interpreter finalization meanwhile.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
