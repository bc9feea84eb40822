"""YARN's node reports, read by the ApplicationMaster from the ResourceManager's web
services (``/ws/v1/cluster/nodes``).

Why the web services: Skein's ApplicationClient, which the ApplicationMaster holds,
has no call for node reports, and the scheduler's answers to the ApplicationMaster
tell only the queue's headroom, not what each host has free. Without them a
container no live host can hold is asked for again and again until the job's
slot.request.timeout (issue 81).

A Kerberos cluster's web services take SPNEGO. With the keytab that came with the
application (security.kerberos.login.keytab) the reader logs in as its principal;
without one the container holds no ticket, so the reports are not read and workers
are asked for as before, without the fit check (said once in the log).
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import requests

from yarnflow.appmaster.resourcemanager.drivers.base import NodeReport
from yarnflow.core.hadoop_conf import HadoopConf, HadoopConfigError

log = logging.getLogger(__name__)


def parse_nodes(page: dict[str, Any]) -> list[NodeReport]:
    """The RUNNING nodes of a ``/ws/v1/cluster/nodes`` answer."""
    nodes = (page.get("nodes") or {}).get("node") or []
    reports = []
    for node in nodes:
        if node.get("state", "RUNNING") != "RUNNING":
            continue
        free_vcores = int(node.get("availableVirtualCores", 0))
        free_mb = int(node.get("availMemoryMB", 0))
        reports.append(NodeReport(
            node["nodeHostName"], free_vcores, free_mb,
            free_vcores + int(node.get("usedVirtualCores", 0)),
            free_mb + int(node.get("usedMemoryMB", 0)),
            frozenset(node.get("nodeLabels") or ())))
    return sorted(reports, key=lambda r: r.host)


class RestNodeReports:
    """Reads the live nodes; raises what ``requests`` raises (the caller logs it)."""

    def __init__(self, webapp_address: str, timeout: float,
                 auth: Callable[[], Any] | None = None) -> None:
        self.url = f"http://{webapp_address}/ws/v1/cluster/nodes"
        self._timeout = timeout
        self._auth = auth

    def read(self) -> list[NodeReport]:
        answer = requests.get(self.url, params={"states": "RUNNING"}, timeout=self._timeout,
                              auth=self._auth() if self._auth else None,
                              headers={"Accept": "application/json"})
        answer.raise_for_status()
        return parse_nodes(answer.json())


def node_reports_from_conf(timeout: float, principal: str = "",
                           keytab: str = "") -> RestNodeReports | None:
    """The reader for the cluster of ``$HADOOP_CONF_DIR`` (the client's configuration,
    shipped with the application), or None where it cannot read them."""
    try:
        hadoop = HadoopConf.load()
    except HadoopConfigError as err:
        log.info("YARN's node reports are not read (no Hadoop configuration: %s): a request "
                 "no host can fit is not recognised", err)
        return None
    if hadoop.get("yarn.http.policy").strip().upper() == "HTTPS_ONLY":
        log.info("YARN's node reports are not read (yarn.http.policy is HTTPS_ONLY): a "
                 "request no host can fit is not recognised")
        return None
    auth: Callable[[], Any] | None = None
    if hadoop.kerberos:
        if not keytab:
            log.info("YARN's node reports are not read: this Kerberos cluster's web services "
                     "need a ticket, and no keytab came with the application "
                     "(security.kerberos.login.keytab); a request no host can fit is not "
                     "recognised")
            return None
        from yarnflow.core.fs.webhdfs import keytab_spnego
        auth = lambda: keytab_spnego(principal, keytab)  # noqa: E731 - a fresh login each read
    return RestNodeReports(hadoop.rm_webapp_address, timeout, auth)
