"""A yarnflow application as YARN sees it, from the client: its report, waiting for
its end, its ApplicationMaster's address, killing it, its logs.

What the application's Dispatcher says of its job is ``yarn_apps.YarnApplication``'s,
over ``DispatcherClient``; both use this module, which uses neither, so the client
that finds the Dispatcher and the application that talks to it need no cycle."""
from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from typing import Any, Self

from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.client.targets.yarn_client import bounded, skein_client
from yarnflow.client.targets.yarn_errors import YarnError
from yarnflow.core.clock import SYSTEM_CLOCK, Deadline, poll_until
from yarnflow.core.contract import APPMASTER_ADDRESS_KEY, JOB_ID_KEY
from yarnflow.core.details import JobDetails
from yarnflow.core.ids import JobID

log = logging.getLogger(__name__)

FINISHED_STATES = ("FINISHED", "FAILED", "KILLED")
log = logging.getLogger(__name__)


@dataclass
class ApplicationStatus:
    app_id: str
    state: str              # YARN's: ACCEPTED, RUNNING, FINISHED, FAILED, KILLED
    final_status: str       # SUCCEEDED, FAILED, KILLED, UNDEFINED
    diagnostics: str
    tracking_url: str
    details: JobDetails | None = None    # the job's: live, or archived once it ended

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES


class YarnApplicationReport:
    """One submitted application as YARN and its ApplicationMaster's key-value store
    see it: no call here reaches the Dispatcher."""

    def __init__(self, app_id: str, timeout: float, store: ApplicationStore | None = None) -> None:
        self.app_id = app_id
        self.timeout = timeout
        self.store = store or ApplicationStore()
        self._client = skein_client(timeout)
        self.job_id: JobID = self.store.info(app_id).get("job_id", "")

    def close(self) -> None:
        """Nothing to close: Skein's client is shared (yarn_client.skein_client)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def report(self) -> Any:
        try:
            return bounded(lambda: self._client.application_report(self.app_id), self.timeout,
                           f"asking YARN about {self.app_id}")
        except ValueError as err:
            raise YarnError(f"YARN knows no application {self.app_id}: {err}") from None

    def status(self, with_details: bool = False) -> ApplicationStatus:
        """YARN's report of the application (``with_details``: see YarnApplication)."""
        report = self.report()
        status = ApplicationStatus(self.app_id, str(report.state), str(report.final_status),
                                   report.diagnostics or "", report.tracking_url or "")
        if status.finished and LAUNCH_FAILED in status.diagnostics:
            status.diagnostics = launch_failure(self.app_id, self.timeout) or status.diagnostics
        return status

    def wait_finished(self, timeout: float, poll: float = 0.5) -> ApplicationStatus:
        seen: list[ApplicationStatus] = []

        def ended() -> ApplicationStatus | None:
            seen.append(self.status(with_details=False))
            return seen[-1] if seen[-1].finished else None
        status = poll_until(ended, timeout, poll)
        if status is None:
            raise YarnError(f"{self.app_id} still {seen[-1].state} after {timeout:g} s")
        return status

    def appmaster_address(self) -> str | None:
        """The ApplicationMaster's gRPC address from Skein's key-value store; None
        while it has not published one."""
        import skein
        tls = self.store.credentials(self.app_id)
        try:
            app = bounded(lambda: self._client.connect(
                self.app_id, wait=False, security=skein.Security(cert_bytes=tls.cert_pem,
                                                                 key_bytes=tls.key_pem)),
                self.timeout, f"connecting to {self.app_id}'s ApplicationMaster")
            address = app.kv.get(APPMASTER_ADDRESS_KEY)
            if address is None:
                return None
            self.job_id = self.job_id or JobID((app.kv.get(JOB_ID_KEY) or b"").decode())
        except (skein.exceptions.ConnectionError, TimeoutError):
            # between two ApplicationMaster attempts YARN's report still names the dead
            # one for a moment, and the next one's store is empty until it publishes
            return None
        return bytes(address).decode()

    def kill(self) -> None:
        """Have YARN kill the application, whatever its ApplicationMaster does."""
        import skein
        try:
            bounded(lambda: self._client.kill_application(self.app_id), self.timeout,
                    f"killing {self.app_id}")
        except skein.exceptions.DriverError as err:
            raise YarnError(refused_kill(self.app_id, str(err))) from None


def refused_kill(app_id: str, message: str) -> str:
    """YARN's refusal of a kill, in one line: its own words name who was refused
    (application ACLs: only the owner, yarn.modify.acls and YARN's admins may kill)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    denied = next((line for line in lines if "cannot perform operation" in line), "")
    if denied:
        reason = denied.rpartition("Exception: ")[2]
        return (f"YARN refuses to kill {app_id}: {reason}. Fix: ask its owner or a YARN "
                "admin, or have the owner submit it with -D yarn.modify.acls=<you>")
    return f"YARN refuses to kill {app_id}: {lines[0] if lines else 'no reason given'}"


# YARN's log aggregation states that mean "still collecting".
_AGGREGATING = ("NOT_START", "RUNNING", "RUNNING_WITH_FAILURE")


def wait_for_log_aggregation(app_id: str, timeout: float) -> None:
    """Right after an application ends, its NodeManagers are still uploading container
    logs; `yarn logs` would print only the containers already collected. Wait (up to
    ``timeout``) until the ResourceManager reports aggregation done, then read."""
    import json
    import urllib.request
    from yarnflow.core.hadoop_conf import HadoopConf, HadoopConfigError
    try:
        web = HadoopConf.load().get("yarn.resourcemanager.webapp.address")
    except HadoopConfigError:
        return                         # `yarn logs` will say what is wrong
    url = f"http://{web}/ws/v1/cluster/apps/{app_id}"
    deadline = Deadline(SYSTEM_CLOCK, timeout)

    def collected() -> bool | None:
        try:
            with urllib.request.urlopen(url, timeout=max(1.0, deadline.left())) as r:
                report = json.load(r)["app"]
        except (OSError, ValueError, KeyError):
            return True
        if report.get("state") not in FINISHED_STATES or \
                report.get("logAggregationStatus") not in _AGGREGATING:
            return True
        return None
    poll_until(collected, timeout, 0.5)    # past it: print what is collected so far


# Skein's words for an ApplicationMaster script that exited 127: yarnflow's launch
# check (targets/node_python.py) found no interpreter it could run on that host.
LAUNCH_FAILED = "failed with exit code 127"


def launch_failure(app_id: str, timeout: float) -> str | None:
    """The launch check's one line (``yarnflow: host HOST ...``) from the application's
    logs, where Skein's diagnostics only say "see logs"."""
    try:
        logs = application_logs(app_id, timeout)
    except YarnError:
        return None
    found = [line.strip() for line in logs.splitlines() if line.startswith("yarnflow: host ")]
    return found[0] if found else None


def application_logs(app_id: str, timeout: float) -> str:
    """All container logs of the application, through Hadoop's `yarn logs` (it reads
    running containers from the NodeManagers and finished ones from aggregation)."""
    wait_for_log_aggregation(app_id, timeout / 2)
    try:
        result = subprocess.run(["yarn", "logs", "-applicationId", app_id], capture_output=True,
                                text=True, timeout=timeout)
    except FileNotFoundError:
        raise YarnError("Hadoop's `yarn` command is not on PATH. Fix: put your Hadoop "
                        "installation's bin/ first on PATH") from None
    except subprocess.TimeoutExpired:
        raise YarnError(f"`yarn logs` took longer than {timeout:g} s") from None
    if result.returncode != 0 and not result.stdout:
        raise YarnError(f"`yarn logs -applicationId {app_id}` failed: {result.stderr.strip()[-2000:]}")
    return result.stdout
