"""The ResourceManager's check of workers YARN has not placed against what each live
host has free (the decision is fit_check.py's; this acts on it).

A worker waiting ``resourcemanager.node-report.interval`` to be placed makes the
ResourceManager read YARN's node reports, off its main thread, and that often again
while any worker waits. Per waiting worker: one no slot request needs any more (a
freed slot served them) and that does not fit is released, since YARN holds a host
reserved for a request it cannot place and smaller containers would wait behind it;
one that fits is left to YARN; idle
executors whose host it needs are stopped (beyond ``--min-executors``); one that
waits for room is not released and asked again at its start timeout (``waits`` says
why, in the log once, and on the web UI's executors); one no live host could ever
hold fails the slot requests it was for. Where the reports cannot be read, workers are
asked for as before.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, Callable

from yarnflow.appmaster.resourcemanager.drivers.base import NodeReport, ResourceDriver
from yarnflow.appmaster.resourcemanager.fit_check import Fit, IdleExecutor, check_fit
from yarnflow.appmaster.resourcemanager.slotmanager import SlotManager
from yarnflow.core.ids import ResourceID
from yarnflow.rpc.endpoint import MainThreadExecutor, run_on_thread

log = logging.getLogger(__name__)


class CapacityCheck:
    """Lives on the ResourceManager's main thread."""

    def __init__(self, interval: float, main: MainThreadExecutor, driver: ResourceDriver,
                 slot_manager: SlotManager, min_workers: int,
                 stop_worker: Callable[[ResourceID, str], None]) -> None:
        self._interval = interval
        self._main = main
        self._driver = driver
        self._slot_manager = slot_manager
        self._min_workers = min_workers
        self._stop_worker = stop_worker
        self.waits: dict[ResourceID, str] = {}      # worker waiting for room -> why
        self._checked_at = float("-inf")
        self._reading = False
        self.run_blocking: Callable[[Callable[[], Any]], "Future[Any]"] = \
            lambda call: run_on_thread(call, "node-reports")

    def check(self, now: float) -> None:
        """From the ResourceManager's periodic checks: read the reports when a worker
        has waited the interval, and that often after."""
        if self._reading or now - self._checked_at < self._interval:
            return
        if not any(now - p.requested_at >= self._interval
                   for p in self._slot_manager.pending_workers.values()):
            self.waits.clear()
            return
        self._reading, self._checked_at = True, now

        def read(future: "Future[list[NodeReport] | None]") -> None:
            reports = None if future.exception() is not None else future.result()
            self._main.execute(self.reports_read, reports)
        self.run_blocking(self._driver.node_reports).add_done_callback(read)

    def reports_read(self, reports: list[NodeReport] | None) -> None:
        """Each worker waiting past the interval, checked against the live hosts."""
        self._reading = False
        if reports is None:          # not known: workers are asked for as before
            self.waits.clear()
            return
        now = self._main.clock.monotonic()
        slots = self._slot_manager
        idle = [IdleExecutor(rid, w.host, w.spec.vcores, w.spec.container.memory_mb)
                for rid, w in slots.workers.items() if w.idle_since is not None and w.spec]
        releasable = max(0, len(slots.workers) - self._min_workers)
        for resource_id, pending in list(slots.pending_workers.items()):
            if now - pending.requested_at < self._interval:
                continue
            decision = check_fit(pending.spec, reports, idle, releasable, self._min_workers)
            if decision.fit is not Fit.FITS and not pending.reserved and not pending.warm:
                # its requests were served otherwise (a slot a finished region gave back):
                # a request YARN cannot place holds a host reserved for it, and smaller
                # containers the job needs next would wait behind it
                log.info("worker %s is released: no slot request needs it, and %s",
                         resource_id, decision.reason)
                self.waits.pop(resource_id, None)
                self._driver.release_worker(resource_id)
                slots.worker_start_failed(resource_id, "no slot request needs it", give_up=False)
                continue
            if decision.fit is Fit.FITS:
                self.waits.pop(resource_id, None)
                continue
            if decision.fit is Fit.NEVER:
                self.waits.pop(resource_id, None)
                log.error("worker %s: %s", resource_id, decision.reason)
                self._driver.release_worker(resource_id)
                slots.worker_start_failed(resource_id, decision.reason, give_up=True)
                continue
            if decision.fit is Fit.RELEASE_IDLE:
                for executor in decision.release:
                    self._stop_worker(executor, f"its host's room is needed: {decision.reason}")
                idle = [e for e in idle if e.resource_id not in decision.release]
                releasable -= len(decision.release)
            if self.waits.get(resource_id) != decision.reason:
                log.warning("worker %s: %s", resource_id, decision.reason)
            self.waits[resource_id] = decision.reason
        for resource_id in list(self.waits):
            if resource_id not in slots.pending_workers:
                del self.waits[resource_id]
