"""The YARN driver: TaskExecutors in YARN containers, through Skein.

Skein fixes a container's size per service, so the application declares one service
per worker spec (``instances: 0``, failures allowed, no restarts: the
ResourceManager decides about replacements, not Skein). Starting a worker is
``add_container`` on its spec's service; the Skein container id it returns is the
resource id the TaskExecutor registers with, so registration matches the request.
Locality is delay scheduling done here, as Spark does it for tasks: Skein fixes a
service's node preference too, so the client also declares, per container size, a
service on each worker host (``nodes`` that host, strict), and a worker asked on a
host starts in that host's service. YARN's own relaxed locality gives up on the host
after about as many scheduling opportunities as the cluster has nodes (well under a
second), so the request is strict instead, and one YARN has not placed after
``yarn.locality.wait`` (counted from when Skein's ApplicationMaster has passed it on
to YARN) is withdrawn and asked anywhere (``on_worker_moved``): a full, dead or
unhealthy host delays an executor by that wait, never for good.
Releasing one is ``kill_container`` of exactly that container. A container that
completes without being released is a lost executor, reported with YARN's own
diagnostics (killed, preempted, failed, node lost).
Skein's client takes no timeout, so every call has ``yarn.appmaster.skein-timeout``.
An ask that Skein refuses is a failed start (under an id of its own). An ask it does
not answer in time is still an ask: the worker is starting under a provisional id, and
the container a late answer makes is adopted under its own (``on_worker_moved``), or
released if the ResourceManager gave up on the worker meanwhile.

A host YARN reports lost (a container "released on a *lost* node": YARN's words for a
NodeManager that died, went unhealthy or was decommissioned) is never asked again
until a container of this application runs there again: requests still waiting on
its per-host services are withdrawn and asked anywhere at once, and locality and the
blocklist's turns pass it by. (Asking Skein for a host whose name no longer resolves,
as a killed container's does on Docker's network, holds Skein's ApplicationMaster in
Hadoop's rack resolver for each ask.) Failed starts are told apart by what they say:
only one that says something about the worker spec (it exited, it outgrew its
container, Skein refused the service) counts toward
``resourcemanager.start-worker-max-failures``; a lost host, a preemption or a late
answer does not.
"""
from __future__ import annotations

import logging
import re
import threading
from typing import Any, Callable, Protocol, TypeVar

from yarnflow.appmaster.resourcemanager.settings import YarnDriverSettings
from yarnflow.core.ids import ResourceID
from yarnflow.appmaster.resourcemanager.drivers.base import (NodeReport, ResourceDriver,
                                                             WorkerEvents)
from yarnflow.core.bounded import CallTimedOut, call_within
from yarnflow.core.clock import SYSTEM_CLOCK, Clock
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.conf import Configuration
from yarnflow.core.resources import ResourceSpec

log = logging.getLogger(__name__)
T = TypeVar("T")


class NodeReader(Protocol):
    """Where YARN's node reports come from (drivers/yarn_nodes.py; a fake in tests)."""
    def read(self) -> list[NodeReport]: ...

_FINISHED_STATES = ["SUCCEEDED", "FAILED", "KILLED"]
_LIVE_STATES = ["WAITING", "REQUESTED", "RUNNING"]
# a page refreshing every few seconds, in several browsers, asks Skein at most this often
_PLACEMENTS_MAX_AGE_S = 2.0
# Skein's ApplicationMaster heartbeats YARN every 5 s while it has nothing pending
# (min(5 s, the AM expiry interval's share)), so a container asked for reaches YARN's
# scheduler up to this long after add_container: the locality wait starts after it.
SKEIN_IDLE_HEARTBEAT_S = 5.0
# YARN's diagnostics for a container on a NodeManager it removed (lost, unhealthy,
# decommissioned): SchedulerUtils.LOST_CONTAINER
_LOST_NODE = re.compile(r"released on a \*?lost\*? node", re.IGNORECASE)
# ... and for other ends that are not the container's own doing
_NOT_THE_SPEC = re.compile(r"released on a \*?lost\*? node|preempted|expired since it was unused|"
                           r"Failed to start, exception raised|decommission",
                           re.IGNORECASE)


def node_host(container: Any) -> str:
    """The host of the NodeManager a Skein container ran on ("" when it never had one)."""
    return (container.yarn_node_http_address or "").rsplit(":", 1)[0]


def blames_the_spec(message: str) -> bool:
    """Whether YARN's (or Skein's) words for a container's end say something about the
    container itself rather than its host or the cluster."""
    return not _NOT_THE_SPEC.search(message or "")


# a NodeManager's words for a container it killed for its memory (ContainersMonitorImpl)
# (Skein may pass on only its usage part: "3.1 GB of 1.3 GB physical memory used")
_MEMORY_KILL = re.compile(r"([\d.]+ [KMGT]?B) of ([\d.]+ [KMGT]?B) (physical|virtual) memory used",
                          re.IGNORECASE)


def memory_kill(message: str) -> str:
    """One line for a container its NodeManager killed for outgrowing its size, naming
    what to raise ("" for any other end)."""
    found = _MEMORY_KILL.search(message or "")
    if found is None:
        return ""
    used, size, kind = found.group(1), found.group(2), found.group(3).lower()
    return (f"killed by its NodeManager for using {used} of {kind} memory, more than its "
            f"container's {size}; fix: raise taskmanager.memory.overhead (the executor's own "
            "process) or the slots' memory (taskmanager.default-slot.memory, or the "
            "operators' ResourceSpec), or lower taskmanager.memory.managed.fraction")


def describe_completion(container: Any) -> str:
    """YARN's view of why a container ended, with its ids, for logs and job failures."""
    message = (container.exit_message or "").strip().replace("\n", " ")
    node = container.yarn_node_http_address or "an unknown node"
    killed = memory_kill(message)
    if killed:
        return f"YARN container {container.yarn_container_id or '?'} on {node} was {killed}"
    if len(message) > 400:
        message = message[:400] + " ..."
    return (f"YARN container {container.yarn_container_id or '?'} (Skein {container.id}) on "
            f"{node} ended {container.state}: {message or 'no diagnostics from YARN'}")


class YarnDriver(ResourceDriver):
    def __init__(self, config: Configuration, app: Any, services: dict[str, str],
                 max_container: ResourceSpec,
                 host_services: dict[tuple[str, str], str] | None = None,
                 clock: Clock = SYSTEM_CLOCK, nodes: NodeReader | None = None) -> None:
        """``app`` is a ``skein.ApplicationClient``; ``services`` maps worker spec names
        to the Skein services the application declared for them, ``host_services``
        (worker spec name, host) to the service of that size on that host; ``nodes``
        reads YARN's node reports (drivers/yarn_nodes.py), where they can be read."""
        self._settings = YarnDriverSettings.of(config)     # read once, here
        self._app = app
        self._services = services
        self._host_services = dict(host_services or {})
        self._clock = clock
        self._max_container = max_container
        self._events: WorkerEvents | None = None
        self._requested: set[ResourceID] = set()
        self._released: set[ResourceID] = set()
        self._reported: set[ResourceID] = set()
        # asked on a host: since, fallback service, host
        self._on_host: dict[ResourceID, tuple[float, str, str]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._placements: tuple[float, dict[str, tuple[str, str]]] = (-_PLACEMENTS_MAX_AGE_S, {})
        self._unasked = 0
        self._turn = 0          # the last host a worker went to, to avoid blocked ones
        self._asks = 0          # asks made so far: a container's number tells old from new
        self._ask_number: dict[ResourceID, int] = {}
        self._lost: dict[str, int] = {}      # lost host -> the ask count when it was lost
        self._provisional: set[ResourceID] = set()   # asked, Skein has not answered yet
        self._nodes = nodes
        self._nodes_failing = False     # the last read failed (said once, until one works)

    def _skein(self, call: Callable[[], T], what: str) -> T:
        return call_within(call, self._settings.skein_timeout, what)

    @staticmethod
    def _not_taken(err: Exception) -> tuple[str, bool]:
        """A refused ask's cause, and whether it is the spec's fault: Skein refusing the
        service is; Skein out of reach is not."""
        if isinstance(err, CallTimedOut):
            return f"{err} (yarn.appmaster.skein-timeout)", False
        return (f"Skein's ApplicationMaster refused the container request: {err}",
                isinstance(err, (ValueError, KeyError)))

    def start(self, events: WorkerEvents, resource_manager_address: str) -> None:
        self._events = events
        self._poller = threading.Thread(target=self._watch_containers, name="yarn-containers",
                                        daemon=True)
        self._poller.start()

    def request_worker(self, spec: WorkerSpec, hosts: tuple[str, ...] = (),
                       avoid: frozenset[str] = frozenset()) -> ResourceID:
        service = self._services.get(spec.name)
        if service is None:
            raise RuntimeError(
                f"this application declared no container size for worker spec {spec.name} "
                f"(declared: {', '.join(sorted(self._services)) or 'none'})")
        lost = self.lost_hosts()
        host = next((h for h in hosts if (spec.name, h) in self._host_services
                     and h not in lost), "") or self._elsewhere(spec.name, avoid, lost)
        with self._lock:
            self._unasked += 1
            refused = ResourceID(f"{service}_not-asked-{self._unasked}")
        asked = self._ask(self._host_services.get((spec.name, host), service), host, service,
                          refused)
        if asked is None:
            return refused
        log.info("requested container %s (%d MB, %d vcores) for worker spec %s%s",
                 asked, spec.container.memory_mb, spec.vcores, spec.name,
                 f" on {host}" if host else
                 f" anywhere (no service on a live host of {', '.join(hosts)})" if hosts else "")
        return asked

    def _ask(self, service: str, host: str, fallback: str,
             instead_of: ResourceID) -> ResourceID | None:
        """Ask Skein for a container of ``service``: its id; or, when Skein does not
        answer in time, a provisional id that its late answer replaces
        (``on_worker_moved``); or None when Skein refused, which is reported as a
        failed start of ``instead_of``. The report reaches the ResourceManager's main
        thread after the call that asks, so it finds the worker counted as starting."""
        try:
            container = self._skein(lambda: self._app.add_container(service),
                                    f"asking Skein's ApplicationMaster for a {service} container")
        except CallTimedOut as err:
            with self._lock:
                self._unasked += 1
                provisional = ResourceID(f"{service}_asked-{self._unasked}")
                self._provisional.add(provisional)
            log.warning("%s (yarn.appmaster.skein-timeout): the container it makes will be "
                        "adopted as %s's", err, provisional)
            err.late.add_done_callback(
                lambda late: self._answered_late(provisional, late, host, fallback))
            return provisional
        except Exception as err:     # noqa: BLE001 - a failed start, whatever Skein raised
            cause, spec_fault = self._not_taken(err)
            log.warning("no %s container: %s", service, cause)
            if self._events is not None:
                self._events.on_worker_terminated(instead_of, cause, spec_fault)
            return None
        self._asked(ResourceID(container.id), host, fallback)
        return ResourceID(container.id)

    def _asked(self, resource_id: ResourceID, host: str, fallback: str) -> None:
        with self._lock:
            self._asks += 1
            self._ask_number[resource_id] = self._asks
            self._requested.add(resource_id)
            if host:
                self._on_host[resource_id] = (self._clock.monotonic(), fallback, host)

    def _answered_late(self, provisional: ResourceID, late: Any, host: str, fallback: str) -> None:
        """Skein answered an ask after its deadline: the container is the worker's, unless
        the ResourceManager released the worker meanwhile."""
        with self._lock:
            self._provisional.discard(provisional)
            released = provisional in self._released
        err = late.exception()
        if err is not None:
            if not released and self._events is not None:
                cause, spec_fault = self._not_taken(err)
                self._events.on_worker_terminated(provisional, cause, spec_fault)
            return
        container_id = ResourceID(late.result().id)
        if released:
            log.warning("Skein answered late with container %s for %s, which was given up "
                        "meanwhile: releasing it", container_id, provisional)
            with self._lock:
                self._requested.add(container_id)
            self.release_worker(container_id)
            return
        self._asked(container_id, host, fallback)
        log.warning("Skein answered late with container %s: adopted as the worker %s was",
                    container_id, provisional)
        if self._events is not None:
            self._events.on_worker_moved(provisional, container_id)

    def node_reports(self) -> list[NodeReport] | None:
        """YARN's live nodes but those it lost under this application (a lost host may
        still be RUNNING in the reports until its NodeManager's expiry)."""
        if self._nodes is None:
            return None
        try:
            reports = self._nodes.read()
        except Exception as err:  # noqa: BLE001 - unknown this time; the next read tries again
            if not self._nodes_failing:
                log.warning("could not read YARN's node reports (%s): workers are asked for "
                            "without knowing what each host has free", err)
            self._nodes_failing = True
            return None
        if self._nodes_failing:
            log.info("YARN's node reports are read again")
        self._nodes_failing = False
        lost = self.lost_hosts()
        return [r for r in reports if r.host not in lost]

    def forget_hosts_not_running(self, reports: list[NodeReport]) -> None:
        """Hosts the application was planned on that YARN no longer runs (a new attempt
        after its host died): treated as lost, so no executor is asked there."""
        running = {r.host for r in reports}
        for host in sorted({h for _, h in self._host_services} - running):
            self._host_lost(host, "not a RUNNING node in YARN's node reports")

    def worker_hosts(self) -> set[str]:
        lost = self.lost_hosts()
        return {host for _, host in self._host_services if host not in lost}

    def lost_hosts(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._lost)

    def _elsewhere(self, spec_name: str, avoid: frozenset[str],
                   lost: frozenset[str] = frozenset()) -> str:
        """With hosts blocked, a worker asked for anywhere is asked on a host that is not
        (Skein takes no node blacklist; its strict per-host services do the same), the
        live hosts taken in turn; "" (anywhere) when none is left. A lost host alone
        needs no pinning: YARN places nothing on a node it removed."""
        if not avoid:
            return ""
        hosts = sorted(h for name, h in self._host_services
                       if name == spec_name and h not in avoid and h not in lost)
        if not hosts:
            return ""
        self._turn += 1
        return hosts[self._turn % len(hosts)]

    def _ask_anywhere_when_overdue(self) -> None:
        """Withdraw host requests YARN has not placed within yarn.locality.wait, and
        those on a host YARN lost, and ask for the same size anywhere."""
        wait = SKEIN_IDLE_HEARTBEAT_S + self._settings.locality_wait
        now = self._clock.monotonic()
        lost = self.lost_hosts()
        with self._lock:
            overdue = {rid: (fallback, host) for rid, (since, fallback, host) in self._on_host.items()
                       if now - since >= wait or host in lost}
        if not overdue:
            return
        waiting = {c.id for c in self._skein(lambda: self._app.get_containers(
            states=["WAITING", "REQUESTED"]), "listing the containers YARN has not placed")}
        for resource_id, (fallback, host) in overdue.items():
            with self._lock:          # released meanwhile by the ResourceManager: gone
                if self._on_host.pop(resource_id, None) is None:
                    continue
            if resource_id not in waiting:
                continue                      # placed on its host (or ended): nothing to do
            self.release_worker(resource_id)
            moved = self._ask(fallback, "", fallback, instead_of=resource_id)
            if moved is None:
                continue
            log.info("container %s was not placed on %s %s: asked anywhere as %s", resource_id,
                     host, "(YARN lost the host)" if host in lost else
                     f"within {wait:g} s (yarn.locality.wait after Skein's heartbeat)", moved)
            if self._events is not None:
                self._events.on_worker_moved(resource_id, moved)

    def adopt(self, resource_ids: list[ResourceID]) -> None:
        """Containers Skein requested at application start (services declared with
        instances): watched like requested ones."""
        with self._lock:
            self._requested.update(resource_ids)

    def release_worker(self, resource_id: ResourceID) -> None:
        with self._lock:
            self._on_host.pop(resource_id, None)
            if resource_id in self._released:
                return
            self._released.add(resource_id)
            if resource_id in self._provisional or "_not-asked-" in resource_id:
                return     # no container yet: a late answer is released when it comes
        try:
            self._skein(lambda: self._app.kill_container(resource_id),
                        f"releasing container {resource_id}")
            log.info("released container %s", resource_id)
        except CallTimedOut as err:   # Skein kills it when it gets to the call
            log.warning("%s (yarn.appmaster.skein-timeout)", err)
        except Exception as err:  # noqa: BLE001 - already gone: Skein says ValueError
            log.info("container %s was already gone when released (%s)", resource_id, err)

    def max_worker_resources(self) -> ResourceSpec:
        return self._max_container

    def stop(self) -> None:
        self._stop.set()

    def placements(self) -> dict[str, tuple[str, str]]:
        fetched_at, known = self._placements
        if self._clock.monotonic() - fetched_at < _PLACEMENTS_MAX_AGE_S:
            return known
        try:
            containers = self._skein(lambda: self._app.get_containers(states=_LIVE_STATES),
                                     "listing the containers")
        except Exception as err:   # noqa: BLE001 - the page shows what it knew
            log.info("could not list containers for the web UI: %s", err)
            return known
        known = {c.id: (c.yarn_container_id or "", c.yarn_node_http_address or "")
                 for c in containers}
        self._placements = (self._clock.monotonic(), known)
        return known

    def _host_lost(self, host: str, cause: str) -> None:
        with self._lock:
            if not host or host in self._lost:
                return
            self._lost[host] = self._asks
        log.warning("YARN lost host %s (%s): no executor is asked there until a container of "
                    "this application runs there again", host, cause)

    def _notice_hosts_back(self) -> None:
        """A lost host is back once a container asked after its loss runs there."""
        with self._lock:
            if not self._lost:
                return
        running = self._skein(lambda: self._app.get_containers(states=["RUNNING"]),
                              "listing the running containers")
        for container in running:
            host = node_host(container)
            with self._lock:
                if host in self._lost and self._ask_number.get(container.id, 0) > self._lost[host]:
                    del self._lost[host]
                    log.info("host %s is back: container %s runs there", host, container.id)

    def poll_once(self) -> None:
        """One round of the container watch: lost containers and hosts reported, host
        requests moved, hosts that came back noticed."""
        try:
            finished = self._skein(lambda: self._app.get_containers(states=_FINISHED_STATES),
                                   "listing the containers that ended")
        except Exception as err:  # noqa: BLE001 - logged; the next poll tries again
            log.warning("could not list containers from Skein's ApplicationMaster: %s", err)
            finished = []
        for container in finished:
            with self._lock:
                if container.id not in self._requested or container.id in self._reported:
                    continue
                self._reported.add(container.id)
                released = container.id in self._released
            if _LOST_NODE.search(container.exit_message or ""):
                self._host_lost(node_host(container), describe_completion(container))
            if released:
                continue
            cause = describe_completion(container)
            log.warning("TaskExecutor container lost: %s", cause)
            if self._events is not None:
                self._events.on_worker_terminated(container.id, cause,
                                                  blames_the_spec(container.exit_message))
        try:      # a failed move must not hold back the news of lost containers
            self._ask_anywhere_when_overdue()
        except Exception as err:  # noqa: BLE001 - logged; the next poll tries again
            log.warning("could not ask anywhere for containers overdue on their hosts: %s", err)
        try:
            self._notice_hosts_back()
        except Exception as err:  # noqa: BLE001 - logged; the next poll tries again
            log.info("could not look for lost hosts that came back: %s", err)

    def _watch_containers(self) -> None:
        interval = self._settings.container_poll_interval
        while not self._stop.wait(interval):
            self.poll_once()
