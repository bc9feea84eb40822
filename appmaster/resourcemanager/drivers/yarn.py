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
Skein's client takes no timeout, so every call has ``yarn.appmaster.skein-timeout``:
an ask that Skein refuses or does not answer in time is a failed start (under an id
of its own), which the ResourceManager retries with back-off as any other; a
container that a late answer made after all is released at once.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, TypeVar

from yarnflow.core.ids import ResourceID
from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver, WorkerEvents
from yarnflow.core.bounded import CallTimedOut, call_within
from yarnflow.core.clock import SYSTEM_CLOCK, Clock
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.conf import Configuration, options
from yarnflow.core.resources import ResourceSpec

log = logging.getLogger(__name__)
T = TypeVar("T")

_FINISHED_STATES = ["SUCCEEDED", "FAILED", "KILLED"]
_LIVE_STATES = ["WAITING", "REQUESTED", "RUNNING"]
# a page refreshing every few seconds, in several browsers, asks Skein at most this often
_PLACEMENTS_MAX_AGE_S = 2.0
# Skein's ApplicationMaster heartbeats YARN every 5 s while it has nothing pending
# (min(5 s, the AM expiry interval's share)), so a container asked for reaches YARN's
# scheduler up to this long after add_container: the locality wait starts after it.
SKEIN_IDLE_HEARTBEAT_S = 5.0


def describe_completion(container: Any) -> str:
    """YARN's view of why a container ended, with its ids, for logs and job failures."""
    message = (container.exit_message or "").strip().replace("\n", " ")
    if len(message) > 400:
        message = message[:400] + " ..."
    node = container.yarn_node_http_address or "an unknown node"
    return (f"YARN container {container.yarn_container_id or '?'} (Skein {container.id}) on "
            f"{node} ended {container.state}: {message or 'no diagnostics from YARN'}")


class YarnDriver(ResourceDriver):
    def __init__(self, config: Configuration, app: Any, services: dict[str, str],
                 max_container: ResourceSpec,
                 host_services: dict[tuple[str, str], str] | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        """``app`` is a ``skein.ApplicationClient``; ``services`` maps worker spec names
        to the Skein services the application declared for them, ``host_services``
        (worker spec name, host) to the service of that size on that host."""
        self._config = config
        self._app = app
        self._services = services
        self._host_services = dict(host_services or {})
        self._clock = clock
        self._max_container = max_container
        self._events: WorkerEvents | None = None
        self._requested: set[ResourceID] = set()
        self._released: set[ResourceID] = set()
        self._reported: set[ResourceID] = set()
        self._on_host: dict[ResourceID, tuple[float, str]] = {}   # asked on a host: since, fallback service
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._placements: tuple[float, dict[str, tuple[str, str]]] = (-_PLACEMENTS_MAX_AGE_S, {})
        self._unasked = 0
        self._turn = 0          # the last host a worker went to, to avoid blocked ones

    def _skein(self, call: Callable[[], T], what: str) -> T:
        return call_within(call, self._config.get(options.YARN_SKEIN_TIMEOUT), what)

    def _add_container(self, service: str) -> Any:
        """Skein's new container on ``service``; raises what Skein raised, or
        ``CallTimedOut`` after arranging to release the container a late answer makes."""
        try:
            return self._skein(lambda: self._app.add_container(service),
                               f"asking Skein's ApplicationMaster for a {service} container")
        except CallTimedOut as err:
            err.late.add_done_callback(self._release_late)
            raise

    def _release_late(self, late: Any) -> None:
        if late.exception() is not None:
            return
        container = late.result()
        log.warning("Skein answered late with container %s: releasing it", container.id)
        self.release_worker(container.id)

    @staticmethod
    def _not_taken(err: Exception) -> str:
        if isinstance(err, CallTimedOut):
            return f"{err} (yarn.appmaster.skein-timeout)"
        return f"Skein's ApplicationMaster refused the container request: {err}"

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
        host = next((h for h in hosts if (spec.name, h) in self._host_services), "") \
            or self._elsewhere(spec.name, avoid)
        try:
            container = self._add_container(self._host_services.get((spec.name, host), service))
        except Exception as err:     # noqa: BLE001 - a failed start, whatever Skein raised
            with self._lock:
                self._unasked += 1
                resource_id = ResourceID(f"{service}_not-asked-{self._unasked}")
            cause = self._not_taken(err)
            log.warning("no container for worker spec %s: %s", spec.name, cause)
            if self._events is not None:     # after the ResourceManager counts it as starting
                self._events.on_worker_terminated(resource_id, cause)
            return resource_id
        started = ResourceID(container.id)
        with self._lock:
            self._requested.add(started)
            if host:
                self._on_host[started] = (self._clock.monotonic(), service)
        log.info("requested container %s (%s: %d MB, %d vcores) for worker spec %s%s",
                 container.id, service, spec.container.memory_mb, spec.vcores, spec.name,
                 f" on {host}" if host else
                 f" anywhere (no service on {', '.join(hosts)})" if hosts else "")
        return started

    def worker_hosts(self) -> set[str]:
        return {host for _, host in self._host_services}

    def _elsewhere(self, spec_name: str, avoid: frozenset[str]) -> str:
        """With hosts blocked, a worker asked for anywhere is asked on a host that is
        not (Skein takes no node blacklist; its strict per-host services do the same),
        the hosts taken in turn; "" (anywhere) when none is left."""
        if not avoid:
            return ""
        hosts = sorted(h for name, h in self._host_services if name == spec_name and h not in avoid)
        if not hosts:
            return ""
        self._turn += 1
        return hosts[self._turn % len(hosts)]

    def _ask_anywhere_when_overdue(self) -> None:
        """Withdraw host requests YARN has not placed within yarn.locality.wait and ask
        for the same size anywhere. A container placed between the look and the
        withdrawal is released like any other: it cost a start, not a worker."""
        wait = SKEIN_IDLE_HEARTBEAT_S + self._config.get(options.YARN_LOCALITY_WAIT)
        now = self._clock.monotonic()
        with self._lock:
            overdue = {rid: fallback for rid, (since, fallback) in self._on_host.items()
                       if now - since >= wait}
        if not overdue:
            return
        waiting = {c.id for c in self._skein(lambda: self._app.get_containers(
            states=["WAITING", "REQUESTED"]), "listing the containers YARN has not placed")}
        for resource_id, fallback in overdue.items():
            with self._lock:          # released meanwhile by the ResourceManager: gone
                if self._on_host.pop(resource_id, None) is None:
                    continue
            if resource_id not in waiting:
                continue                      # placed on its host (or ended): nothing to do
            self.release_worker(resource_id)
            try:
                container = self._add_container(fallback)
            except Exception as err:    # noqa: BLE001 - the request is gone: a failed start
                if self._events is not None:
                    self._events.on_worker_terminated(resource_id, self._not_taken(err))
                continue
            with self._lock:
                self._requested.add(container.id)
            log.info("container %s was not placed on its host within %g s (yarn.locality.wait "
                     "after Skein's heartbeat): asked anywhere as %s", resource_id, wait, container.id)
            if self._events is not None:
                self._events.on_worker_moved(resource_id, container.id)

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

    def _watch_containers(self) -> None:
        interval = self._config.get(options.YARN_CONTAINER_POLL_INTERVAL)
        while not self._stop.wait(interval):
            try:      # a failed move must not hold back the news of lost containers
                self._ask_anywhere_when_overdue()
            except Exception as err:  # noqa: BLE001 - logged; the next poll tries again
                log.warning("could not ask anywhere for containers overdue on their hosts: %s", err)
            try:
                finished = self._skein(lambda: self._app.get_containers(states=_FINISHED_STATES),
                                       "listing the containers that ended")
            except Exception as err:  # noqa: BLE001 - logged; the next poll tries again
                log.warning("could not list containers from Skein's ApplicationMaster: %s", err)
                continue
            for container in finished:
                with self._lock:
                    if container.id not in self._requested or container.id in self._reported:
                        continue
                    self._reported.add(container.id)
                    released = container.id in self._released
                if released:
                    continue
                cause = describe_completion(container)
                log.warning("TaskExecutor container lost: %s", cause)
                if self._events is not None:
                    self._events.on_worker_terminated(container.id, cause)
