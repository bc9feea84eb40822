"""What the web monitor reads, behind one interface (Flink's RestfulGateway), so the
server and its views are tested against ``TestingWebMonitorSource`` and run against
the ApplicationMaster's components. Every method here only reads."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.ids import JobID
from yarnflow.core.clock import SYSTEM_CLOCK, Clock
from yarnflow.conf import options
from yarnflow.core.details import ExecutorDetails, JobDetails
from yarnflow.core.errors import UnknownJob
from yarnflow.core.messages import ClusterOverview

if TYPE_CHECKING:
    from yarnflow.appmaster.components import ApplicationMasterComponents
    from yarnflow.appmaster.dispatcher import Dispatcher

# Flink's GlobalConfiguration.SENSITIVE_KEYS, and ours: a value under such a key is
# never shown, whatever option a later change adds.
_SENSITIVE = re.compile(r"password|secret|token|credential|apikey|api-key|access-key|"
                        r"private|\.key$|keytab|jaas|auth", re.IGNORECASE)
HIDDEN = "******"


@dataclass(frozen=True)
class ApplicationInfo:
    mode: str                   # local | yarn-per-job | yarn-session
    application_id: str         # YARN's; "" on local
    attempt: int                # the ApplicationMaster attempt serving the page
    start_time: float           # epoch seconds
    history_dir: str = ""       # where ended jobs go (`yarnflow history` reads it)


class WebMonitorSource(Protocol):
    def application(self) -> ApplicationInfo: ...
    def jobs(self) -> list[JobDetails]:
        """Running jobs first, then ended ones, each group oldest first."""
    def job(self, job_id: JobID) -> JobDetails:
        """Raises ``UnknownJob``."""
    def plan(self, job_id: JobID) -> list[dict[str, Any]] | None:
        """``yarnflow.core.plan.plan_vertices`` of the job; None when no longer known."""
    def executors(self) -> list[ExecutorDetails]: ...
    def cluster(self) -> ClusterOverview: ...
    def blocked_hosts(self) -> list[BlockedNode]:
        """The ResourceManager's blocklist: every job's blocked hosts."""
    def configuration(self) -> dict[str, str]:
        """The effective configuration, sensitive values hidden."""


def visible_configuration(values: dict[str, Any]) -> dict[str, str]:
    return {key: HIDDEN if _SENSITIVE.search(key) else str(value)
            for key, value in sorted(values.items())}


class ApplicationMasterSource:
    """The components of one ApplicationMaster (or local cluster), and the Dispatcher
    in front of them where there is one; ended jobs of a Dispatcher-less local cluster
    come from the components' own memory."""

    def __init__(self, components: "ApplicationMasterComponents",
                 dispatcher: "Dispatcher | None", mode: str, application_id: str = "",
                 history_dir: str = "", clock: Clock = SYSTEM_CLOCK) -> None:
        self._components = components
        self._dispatcher = dispatcher
        self._info = ApplicationInfo(mode, application_id, components.application_attempt,
                                     clock.time(), history_dir)

    def application(self) -> ApplicationInfo:
        return self._info

    def jobs(self) -> list[JobDetails]:
        if self._dispatcher is not None:
            return self._dispatcher.list_jobs()
        live = []
        for jm in list(self._components.jobs.values()):
            try:
                live.append(jm.details())
            except Exception:   # noqa: BLE001 - it ended meanwhile: it is in `ended` now
                pass
        running = {d.job_id for d in live}
        ended = [d for d in self._components.ended_jobs() if d.job_id not in running]
        return sorted(live, key=lambda d: d.start_time) + sorted(ended, key=lambda d: d.start_time)

    def job(self, job_id: JobID) -> JobDetails:
        if self._dispatcher is not None:
            return self._dispatcher.details(job_id)
        jm = self._components.jobs.get(job_id)
        if jm is not None:
            return jm.details()
        for details in self._components.ended_jobs():
            if details.job_id == job_id:
                return details
        raise UnknownJob(f"no job {job_id} here")

    def plan(self, job_id: JobID) -> list[dict[str, Any]] | None:
        return self._components.plan(job_id)

    def executors(self) -> list[ExecutorDetails]:
        rm = self._components.resource_manager
        executors = rm.main.call(rm.executor_details)
        placements = self._components.driver.placements()   # may ask YARN: not on a main thread
        return [_placed(e, placements.get(e.resource_id)) for e in executors]

    def cluster(self) -> ClusterOverview:
        return self._components.overview()

    def blocked_hosts(self) -> list[BlockedNode]:
        rm = self._components.resource_manager
        return rm.main.call(rm.blocklist.nodes)

    def configuration(self) -> dict[str, str]:
        config = self._components.config
        values = {key: config.get(option) for key, option in options.REGISTRY.items()}
        return visible_configuration(values)


def _placed(executor: ExecutorDetails, placement: tuple[str, str] | None) -> ExecutorDetails:
    if placement is None:
        return executor
    return replace(executor, container_id=placement[0], node=placement[1])
