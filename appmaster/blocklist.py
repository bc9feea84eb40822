"""The blocklist (Flink's FLIP-224, Spark's excludeOnFailure per host): hosts that keep
failing tasks get no new slots and no new containers for
``cluster.resource-blocklist.item.timeout``. Slots already in use there keep their
tasks; the block lifts by itself when its time is up.

A JobMaster decides (it sees which attempt failed where) and tells the
ResourceManager, which keeps every job's blocks for the whole cluster: a host that fails
one job's tasks would fail the next job's too.
"""
from __future__ import annotations

import logging
from collections import deque
from typing import Iterable

from yarnflow.appmaster.jobmaster.settings import BlockerSettings
from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.clock import Clock

log = logging.getLogger(__name__)


class Blocklist:
    """Blocked hosts, each until its time (the clock's epoch seconds); one that is
    past its time is lifted when next looked at."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._nodes: dict[str, BlockedNode] = {}

    def add(self, nodes: Iterable[BlockedNode]) -> list[BlockedNode]:
        """Block (or block for longer); returns the hosts that were not blocked before."""
        new = []
        for node in nodes:
            known = self._current().get(node.host)
            if known is None:
                new.append(node)
            if known is None or node.until > known.until:
                self._nodes[node.host] = node
        return new

    def is_blocked(self, host: str) -> bool:
        return bool(host) and host in self._current()

    def hosts(self) -> frozenset[str]:
        return frozenset(self._current())

    def nodes(self) -> list[BlockedNode]:
        return sorted(self._current().values(), key=lambda n: n.since)

    def _current(self) -> dict[str, BlockedNode]:
        """Asked on every slot request and freed slot: nothing blocked costs nothing."""
        if not self._nodes:
            return self._nodes
        now = self._clock.time()
        for host in [h for h, node in self._nodes.items() if node.until <= now]:
            log.info("host %s is no longer blocked (%s)", host, self._nodes.pop(host).cause)
        return self._nodes


class FailureBlocker:
    """Counts one job's task failures per host within
    ``cluster.resource-blocklist.failure-window``; ``…task-failures`` of them would
    block the host (if the ResourceManager agrees: it never blocks the last host).
    ``slow=True``: counts subtasks found slow there instead (speculation's
    ``execution.batch.speculative.block-slow-node-after``), whose block lasts
    ``…block-slow-node-duration``."""

    def __init__(self, settings: BlockerSettings, clock: Clock, slow: bool = False) -> None:
        self._timeout = settings.timeout
        self.enabled = settings.enabled
        self._threshold = settings.threshold
        self._what = "slow subtasks" if slow else "task failures"
        self._window = settings.window
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def task_failed(self, host: str, blocked: frozenset[str], why: str = "") -> BlockedNode | None:
        """A task failed (or was found slow: ``why``) on ``host``: the block to ask for,
        if this one makes it ``threshold``."""
        if not self.enabled or not host or host in blocked:
            return None
        now = self._clock.monotonic()
        times = self._failures.setdefault(host, deque())
        times.append(now)
        while times and now - times[0] > self._window:
            times.popleft()
        if len(times) < self._threshold:
            return None
        del self._failures[host]
        wall = self._clock.time()
        cause = f"{len(times)} {self._what} within {self._window:g} s" if len(times) > 1 or not why \
            else why
        return BlockedNode(host, cause, wall, wall + self._timeout)
