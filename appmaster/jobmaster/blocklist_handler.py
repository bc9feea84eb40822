"""The job's side of the blocklist (Flink's JobMasterBlocklistHandler): it counts the
job's task failures per host, and asks the ResourceManager to block a host that reaches
``cluster.resource-blocklist.task-failures``. The ResourceManager decides (it knows the
cluster's hosts and never blocks the last one) and keeps a blocked host free of slots
and containers for every job; this job then gives back its free slots there and
declines offers from there."""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Callable

from yarnflow.appmaster.jobmaster.settings import BlockerSettings
from yarnflow.appmaster.blocklist import Blocklist, FailureBlocker
from yarnflow.appmaster.jobmaster.slotpool import SlotPool
from yarnflow.appmaster.resourcemanager.gateway import ResourceManagerGateway
from yarnflow.core.blocklist import BlockedNode
from yarnflow.rpc.endpoint import MainThreadExecutor

log = logging.getLogger(__name__)


class JobMasterBlocklistHandler:
    """Main thread only."""

    def __init__(self, failures: BlockerSettings, slow: BlockerSettings, main: MainThreadExecutor,
                 slot_pool: SlotPool,
                 resource_manager: Callable[[], ResourceManagerGateway | None]) -> None:
        self.blocklist = Blocklist(main.clock)
        self._blocker = FailureBlocker(failures, main.clock)
        self._slow = FailureBlocker(slow, main.clock, slow=True)
        self._main = main
        self._slot_pool = slot_pool
        self._rm = resource_manager

    def offered_from(self, host: str) -> bool:
        """Whether to take slots offered from ``host``. A declined offer tells the
        ResourceManager of the block again, in case that message was lost: it would
        otherwise keep handing out the host's slots."""
        if not self.blocklist.is_blocked(host):
            return True
        self._ask([n for n in self.blocklist.nodes() if n.host == host])
        return False

    def task_failed(self, host: str) -> None:
        """An attempt failed on ``host`` by its own fault (not an input's producer going
        away, not an error that fails every attempt alike)."""
        node = self._blocker.task_failed(host, self.blocklist.hosts())
        if node is not None:
            self._ask([node])

    def task_slow(self, host: str, why: str) -> "Future[object] | None":
        """A subtask was found slow on ``host`` (speculation); done once the
        ResourceManager answered the block this asks for, None when it asks none."""
        node = self._slow.task_failed(host, self.blocklist.hosts(), f"slow: {why}")
        return self._ask([node]) if node is not None else None

    def _ask(self, nodes: list[BlockedNode]) -> "Future[object] | None":
        rm = self._rm()
        if rm is None or not nodes:
            return None
        settled: Future[object] = Future()

        def answered(reply: "Future[list[str]]") -> None:
            if reply.exception() is None:
                self._main.execute(self._blocked, nodes, reply.result(), settled)
            else:        # the next failure there, or the next offer from there, asks again
                log.warning("the ResourceManager did not answer blocking %s: %s",
                            ", ".join(n.host for n in nodes), reply.exception())
                self._main.execute(settled.set_result, None)
        rm.notify_blocked_nodes(nodes).add_done_callback(answered)
        return settled

    def _blocked(self, nodes: list[BlockedNode], hosts: list[str],
                 settled: "Future[object] | None" = None) -> None:
        for node in self.blocklist.add(n for n in nodes if n.host in hosts):
            log.warning("host %s is blocked for this job: %s", node.host, node.cause)
            self._slot_pool.release_free_slots_on(node.host, f"host {node.host} is blocked")
        if settled is not None:
            settled.set_result(None)
