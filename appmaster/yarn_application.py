"""What a YARN ApplicationMaster does in either mode (per job, ``yarn_entrypoint.py``;
session, ``yarn_session.py``): its attempt number and claim on the application, its
log, the container sizes the client declared, the components on one mutual-TLS server,
the web UI behind YARN's proxy, and what YARN's diagnostics say of a job.

Both modes' runners import this module and it imports neither, so the entry point
that chooses between them is the only module that knows both.
"""
from __future__ import annotations

import faulthandler
import json
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from yarnflow.appmaster.attempt_fence import AttemptFence, exit_when_replaced
from yarnflow.appmaster.components import ApplicationMasterComponents
from yarnflow.appmaster.dispatcher import Dispatcher
from yarnflow.appmaster.jobmaster.settings import StorageSettings
from yarnflow.appmaster.settings import YarnApplicationSettings
from yarnflow.appmaster.resourcemanager.delegation_tokens import KeytabTokenProvider
from yarnflow.appmaster.resourcemanager.drivers.yarn import YarnDriver
from yarnflow.appmaster.resourcemanager.drivers.yarn_nodes import node_reports_from_conf
from yarnflow.appmaster.webmonitor import ApplicationMasterSource, WebMonitorServer
from yarnflow.conf import Configuration
from yarnflow.core.container_ladder import ContainerLadder
from yarnflow.core.contract import (APPMASTER_ADDRESS_KEY, KEYTAB_FILE, SERVICES_ENV,
                                    WEB_PAGE_ROUTE, decode_env)
from yarnflow.core.details import JobDetails
from yarnflow.core.fs import open_filesystem
from yarnflow.core.ids import ResourceID
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import JobStatus
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.rpc.security import read_skein_container_credentials

log = logging.getLogger("yarnflow.appmaster")

# How often an attempt looks for a newer one's claim (attempt_fence.py).
REPLACED_CHECK_S = 5.0
# YARN keeps diagnostics in the ResourceManager's memory; keep ours short.
DIAGNOSTICS_LIMIT = 4000
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


def attempt_fence(storage: StorageSettings) -> AttemptFence:
    """This attempt's claim on the application, beside the jobs' stored results:
    ``<execution.batch.partition-store.dir>/.attempts/<application id>/``."""
    directory = f"{storage.root}/.attempts/{os.environ.get('SKEIN_APPLICATION_ID', 'unknown')}"
    return AttemptFence(open_filesystem(directory, storage.filesystem), directory,
                        application_attempt())


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
        text += "\n" + detail[-(DIAGNOSTICS_LIMIT - len(text) - 1):]
    return text[:DIAGNOSTICS_LIMIT]


def keytab_token_provider(settings: YarnApplicationSettings) -> KeytabTokenProvider | None:
    """With the keytab the client shipped (a Kerberos cluster and
    security.kerberos.login.keytab), what obtains new HDFS delegation tokens."""
    if not Path(KEYTAB_FILE).is_file():
        return None
    filesystem = settings.storage.filesystem
    authority = urlsplit(filesystem.default_fs).netloc
    log.info("a keytab for %s came with the application: it obtains new HDFS delegation "
             "tokens before the current ones end", settings.kerberos_principal)
    return KeytabTokenProvider(filesystem.http_address(authority), settings.kerberos_principal,
                               str(Path(KEYTAB_FILE).resolve()), settings.yarn_client_timeout)


def start_components(config: Configuration, settings: YarnApplicationSettings, app: Any,
                     ladder: ContainerLadder | None = None,
                     min_workers: int = 0,
                     register_more: Callable[[ApplicationMasterComponents, Any], None] | None = None,
                     token_provider: KeytabTokenProvider | None = None
                     ) -> ApplicationMasterComponents:
    """The ResourceManager (YARN driver), the JobMaster service and whatever
    ``register_more(components, server)`` adds, on one mutual-TLS server whose address goes to Skein's
    key-value store; containers Skein starts with the application are adopted."""
    plan = load_worker_specs(decode_env(SERVICES_ENV))
    worker_specs, starting = plan.specs, plan.starting
    max_container = settings.largest_worker
    keytab = Path(KEYTAB_FILE)
    nodes = node_reports_from_conf(settings.yarn_client_timeout, settings.kerberos_principal,
                                   str(keytab.resolve()) if keytab.is_file() else "")
    driver = YarnDriver(config, app, plan.services, max_container, plan.host_services,
                        nodes=nodes)
    reports = driver.node_reports()
    if reports:             # none at all is a ResourceManager that just started: no news
        driver.forget_hosts_not_running(reports)
    fence = attempt_fence(settings.storage)
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
             components.application_attempt, settings.application_attempts,
             components.address, dict(plan.services))
    if plan.host_services:
        hosts = driver.worker_hosts()
        log.info("executors can be asked on %d hosts: %s", len(hosts), ", ".join(sorted(hosts)))
    return components


def serve_web_monitor(config: Configuration, settings: YarnApplicationSettings,
                      components: ApplicationMasterComponents, dispatcher: Dispatcher, app: Any,
                      mode: str) -> WebMonitorServer:
    """The web UI and REST API, on this host's loopback by default, added to Skein's web
    UI as a page: YARN's tracking URL leads there through the ResourceManager's proxy.
    A page Skein cannot add is logged, not fatal: the job runs without it."""
    source = ApplicationMasterSource(components, dispatcher, mode,
                                     os.environ.get("SKEIN_APPLICATION_ID", ""),
                                     settings.history_dir)
    server = WebMonitorServer.serve(source, config)
    try:
        app.ui.add_page(WEB_PAGE_ROUTE, server.url.rstrip("/"), link_name="yarnflow")
    except Exception as err:   # noqa: BLE001 - e.g. the route left by an earlier attempt
        log.warning("could not add the web UI to Skein's pages: %s", err)
    return server
