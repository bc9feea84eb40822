"""The blocklist (issue 34, item 3): task failures on a host within a window block it
for a while; the JobMaster gives back its free slots there, declines its offers and
tells the ResourceManager, which gives out no slot there and starts no worker there;
the block lifts by itself. Manual clocks, in-memory peers."""
from __future__ import annotations

import pytest

from tests.unit.fakes import RUNNING, Harness, ManualMainThread
from tests.unit.test_resource_manager import SLOT, Cluster
from tests.unit.test_scheduler import chain
from yarnflow.appmaster.jobmaster.settings import BlockerSettings
from yarnflow.appmaster.blocklist import Blocklist, FailureBlocker
from yarnflow.conf import Configuration
from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.clock import ManualClock
from yarnflow.core.messages import SlotOffer, SlotRequest
from yarnflow.core.status import ExecutionState

ON = ["cluster.resource-blocklist.enabled=true", "cluster.resource-blocklist.task-failures=2",
      "cluster.resource-blocklist.failure-window=60 s", "cluster.resource-blocklist.item.timeout=120 s"]


def blocker(clock: ManualClock, *extra: str) -> FailureBlocker:
    return FailureBlocker(BlockerSettings.failures(Configuration.load(overrides=[*ON, *extra])), clock)


def test_failures_within_the_window_block_a_host_for_the_timeout():
    clock = ManualClock()
    b = blocker(clock)
    assert b.task_failed("nm-1", frozenset()) is None
    clock.advance(61)                      # the first failure is out of the window
    assert b.task_failed("nm-1", frozenset()) is None
    clock.advance(10)
    node = b.task_failed("nm-1", frozenset())
    assert node is not None and node.host == "nm-1" and node.until - node.since == 120
    assert "2 task failures within 60 s" in node.cause


def test_nothing_is_blocked_when_off_or_blocked_already():
    clock = ManualClock()
    off = blocker(clock, "cluster.resource-blocklist.enabled=false")
    for _ in range(3):
        assert off.task_failed("nm-1", frozenset()) is None
    b = blocker(clock)
    for _ in range(3):
        assert b.task_failed("nm-1", frozenset({"nm-1"})) is None


def test_a_block_lifts_when_its_time_is_up_and_a_longer_one_extends_it():
    clock = ManualClock()
    blocklist = Blocklist(clock)
    now = clock.time()
    assert [n.host for n in blocklist.add([BlockedNode("nm-1", "x", now, now + 10)])] == ["nm-1"]
    assert blocklist.add([BlockedNode("nm-1", "y", now, now + 30)]) == []     # known: longer
    clock.advance(20)
    assert blocklist.is_blocked("nm-1") and blocklist.nodes()[0].cause == "y"
    clock.advance(10)
    assert not blocklist.is_blocked("nm-1") and blocklist.hosts() == frozenset()


# --- the JobMaster -----------------------------------------------------------------------
@pytest.fixture
def h():
    config = Configuration.load(overrides=[
        *ON, "heartbeat.timeout=50", "heartbeat.interval=10", "restart-strategy.type=fixed-delay",
        "restart-strategy.fixed-delay.attempts=5", "restart-strategy.fixed-delay.delay=1 s"])
    harness = Harness(chain(1), config, main=ManualMainThread())
    harness.start()
    harness.offer_pending(["te-bad"], {"te-bad": "nm-bad"})
    good = harness.executor("te-good", "nm-good")          # a spare slot on another host
    harness.call(harness.jm.offer_slots, good.location, [SlotOffer("spare", 0, SLOT)])
    yield harness
    harness.close()


def on(h: Harness, rid: str) -> list[str]:
    """The current attempts deployed on executor ``rid``."""
    current = {e.attempt_id for e in h.jm.graph.current_executions()}
    return [t.attempt_id for t in h.executors[rid].submitted if t.attempt_id in current]


def fail_on(h: Harness, rid: str) -> None:
    """The first of its attempts there fails; the rest of its region is cancelled."""
    attempt = on(h, rid)[0]
    h.report(attempt, RUNNING)
    h.report_failure(attempt, "source (1/1) failed: OSError: disk I/O error")
    for execution in list(h.jm.graph.current_executions()):
        if execution.state is ExecutionState.CANCELING:
            h.report(execution.attempt_id, ExecutionState.CANCELED)


def test_a_host_that_keeps_failing_tasks_is_blocked_for_the_job_and_the_cluster(h):
    fail_on(h, "te-bad")
    assert h.rm.blocked == []
    h.jm.main.advance(1)                         # the restart: back in the same slot
    fail_on(h, "te-bad")
    assert [n.host for n in h.rm.blocked] == ["nm-bad"]
    details = h.jm.details()
    assert [(n.host, n.cause) for n in details.blocked_hosts] == \
        [("nm-bad", "2 task failures within 60 s")]
    bad = h.executors["te-bad"]
    assert bad.freed == [t.allocation_id for t in bad.submitted[-1:]], \
        "its slot went back to it once free"
    h.jm.main.advance(1)                         # the restart: on the other host's slot
    assert on(h, "te-bad") == [] and len(on(h, "te-good")) == 3
    offered = h.call(h.jm.offer_slots, bad.location, [SlotOffer("late", 0, SLOT)])
    assert offered == [], "an offer from a blocked host is declined"
    assert len(h.rm.blocked) == 2, "a declined offer tells the ResourceManager again"


def test_a_host_the_resource_manager_does_not_block_is_not_blocked_for_the_job(h):
    h.rm.refuse_blocking = True          # it is the last host the cluster has
    fail_on(h, "te-bad")
    h.jm.main.advance(1)
    fail_on(h, "te-bad")
    assert [n.host for n in h.rm.blocked] == ["nm-bad"]
    assert h.jm.details().blocked_hosts == []
    h.jm.main.advance(1)
    assert len(on(h, "te-bad")) == 3, "the restart goes back to its slot there"


def test_failures_of_other_kinds_do_not_count(h):
    for upstream, non_recoverable in ((True, False), (False, True)):
        attempt = on(h, "te-bad")[0]
        h.report(attempt, RUNNING)
        h.report_failure(attempt, "x", upstream=upstream, non_recoverable=non_recoverable)
        for execution in list(h.jm.graph.current_executions()):
            if execution.state is ExecutionState.CANCELING:
                h.report(execution.attempt_id, ExecutionState.CANCELED)
        h.jm.main.advance(10)
    assert h.rm.blocked == []


# --- the ResourceManager -----------------------------------------------------------------
def test_the_resource_manager_gives_out_no_slot_on_a_blocked_host_and_starts_workers_elsewhere():
    cluster = Cluster()
    cluster.main.call(cluster.rm.register_job_master, "job-1", "jm-1", "jm:1")
    cluster.register("te-1", host="nm-bad")
    clock = cluster.main.clock
    node = BlockedNode("nm-bad", "failures", clock.time(), clock.time() + 20)
    assert cluster.main.call(cluster.rm.block_nodes, [node]) == [], \
        "the only host the cluster has is not blocked"
    cluster.register("te-2", host="nm-good")
    assert cluster.main.call(cluster.rm.block_nodes, [node]) == ["nm-bad"]
    cluster.main.call(cluster.rm.request_slot, SlotRequest("filler", "job-1", "jm-1", "jm:1", SLOT))
    cluster.request("alloc-1")
    assert cluster.executors["te-1"].allocations == []
    assert [rid for rid, _ in cluster.driver.requested] == ["container-0"]
    assert cluster.driver.avoided[-1] == frozenset({"nm-bad"})
    cluster.main.advance(21)                                  # lifted
    cluster.request("alloc-2")
    assert [a.allocation_id for a, _ in cluster.executors["te-1"].allocations] == ["alloc-2"]


# --- what the user sees ------------------------------------------------------------------
def test_the_rest_api_and_the_cli_name_each_blocked_host_with_its_cause_and_time():
    from rich.console import Console
    from yarnflow.appmaster.webmonitor import views
    from yarnflow.client.display import print_summary
    from yarnflow.core.details import JobDetails
    from yarnflow.core.status import JobStatus
    node = BlockedNode("nm-bad", "2 task failures within 60 s", 1_700_000_000.0, 1_700_000_120.0)
    details = JobDetails("j" * 32, "job", JobStatus.RUNNING, 1_700_000_000.0,
                         blocked_hosts=[node])
    rest = views.job(details, None, 1_700_000_010.0)["blocked-hosts"]
    assert rest == [{"host": "nm-bad", "cause": "2 task failures within 60 s",
                     "since": 1_700_000_000_000, "until": 1_700_000_120_000}]
    console = Console(width=200, record=True)
    print_summary(details, console)
    text = console.export_text()
    assert "hosts blocked by job" in text and "nm-bad" in text and "2 task failures" in text
