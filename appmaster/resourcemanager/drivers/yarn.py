"""The YARN driver: TaskExecutors in YARN containers, through Skein.

Skein fixes a container's size per service, so the application declares one service
per worker spec (``instances: 0``, failures allowed, no restarts: the
ResourceManager decides about replacements, not Skein). Starting a worker is
``add_container`` on its spec's service; the Skein container id it returns is the
resource id the TaskExecutor registers with, so registration matches the request.
Releasing one is ``kill_container`` of exactly that container. A container that
completes without being released is a lost executor, reported with YARN's own
diagnostics (killed, preempted, failed, node lost).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver, WorkerEvents
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.conf import Configuration, options
from yarnflow.core.resources import ResourceSpec

log = logging.getLogger(__name__)

_FINISHED_STATES = ["SUCCEEDED", "FAILED", "KILLED"]
_LIVE_STATES = ["WAITING", "REQUESTED", "RUNNING"]
# a page refreshing every few seconds, in several browsers, asks Skein at most this often
_PLACEMENTS_MAX_AGE_S = 2.0


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
                 max_container: ResourceSpec) -> None:
        """``app`` is a ``skein.ApplicationClient``; ``services`` maps worker spec names
        to the Skein services the application declared for them."""
        self._config = config
        self._app = app
        self._services = services
        self._max_container = max_container
        self._events: WorkerEvents | None = None
        self._requested: set[str] = set()
        self._released: set[str] = set()
        self._reported: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._placements: tuple[float, dict[str, tuple[str, str]]] = (0.0, {})

    def start(self, events: WorkerEvents, resource_manager_address: str) -> None:
        self._events = events
        self._poller = threading.Thread(target=self._watch_containers, name="yarn-containers",
                                        daemon=True)
        self._poller.start()

    def request_worker(self, spec: WorkerSpec) -> str:
        service = self._services.get(spec.name)
        if service is None:
            raise RuntimeError(
                f"this application declared no container size for worker spec {spec.name} "
                f"(declared: {', '.join(sorted(self._services)) or 'none'})")
        container = self._app.add_container(service)
        with self._lock:
            self._requested.add(container.id)
        log.info("requested container %s (%s: %d MB, %d vcores) for worker spec %s",
                 container.id, service, spec.container.memory_mb, spec.vcores, spec.name)
        return container.id

    def adopt(self, resource_ids: list[str]) -> None:
        """Containers Skein requested at application start (services declared with
        instances): watched like requested ones."""
        with self._lock:
            self._requested.update(resource_ids)

    def release_worker(self, resource_id: str) -> None:
        with self._lock:
            if resource_id in self._released:
                return
            self._released.add(resource_id)
        try:
            self._app.kill_container(resource_id)
            log.info("released container %s", resource_id)
        except Exception as err:   # already gone: Skein says ValueError
            log.info("container %s was already gone when released (%s)", resource_id, err)

    def max_worker_resources(self) -> ResourceSpec:
        return self._max_container

    def stop(self) -> None:
        self._stop.set()

    def placements(self) -> dict[str, tuple[str, str]]:
        fetched_at, known = self._placements
        if time.monotonic() - fetched_at < _PLACEMENTS_MAX_AGE_S:
            return known
        try:
            containers = self._app.get_containers(states=_LIVE_STATES)
        except Exception as err:   # noqa: BLE001 - the page shows what it knew
            log.info("could not list containers for the web UI: %s", err)
            return known
        known = {c.id: (c.yarn_container_id or "", c.yarn_node_http_address or "")
                 for c in containers}
        self._placements = (time.monotonic(), known)
        return known

    def _watch_containers(self) -> None:
        interval = self._config.get(options.YARN_CONTAINER_POLL_INTERVAL)
        while not self._stop.wait(interval):
            try:
                finished = self._app.get_containers(states=_FINISHED_STATES)
            except Exception as err:
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
