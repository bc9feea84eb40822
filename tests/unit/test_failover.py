"""Failover (seed 003, FLIP-6's TaskManager crash): restart strategies, pipelined
regions, and a real JobMaster recovering from lost executors and failed subtasks on
a manual main thread and clock, with in-memory executors and ResourceManager."""
from __future__ import annotations

import pytest

from tests.unit.fakes import FINISHED, RUNNING, Harness, ManualMainThread
from tests.unit.test_scheduler import chain, diamond, op, source
from yarnflow.appmaster.jobmaster.settings import RestartSettings
from yarnflow.appmaster.jobmaster.executiongraph import (ExecutionGraph, ExecutionState,
                                                         JobStatus)
from yarnflow.appmaster.jobmaster.failover import (ExponentialDelayRestart, FailureRateRestart,
                                                   FixedDelayRestart, RestartAll,
                                                   RestartPipelinedRegion, pipelined_regions,
                                                   restart_strategy)
from yarnflow.appmaster.jobmaster.splits import InputSplitAssigner
from yarnflow.conf import Configuration
from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.jobgraph import JobGraph, PartitionType, ScheduleMode, ShipStrategy
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.codec import as_received

PROFILE, BIG = ResourceSpec(1, 1024), ResourceSpec(2, 4096)

CANCELED, FAILED = ExecutionState.CANCELED, ExecutionState.FAILED


# --- restart strategies ------------------------------------------------------------------
def test_fixed_delay_allows_its_attempts_then_refuses():
    strategy = FixedDelayRestart(attempts=2, delay=3.0)
    for now in (0.0, 10.0):
        strategy.notify_failure(now)
        assert strategy.can_restart() and strategy.backoff_time() == 3.0
    strategy.notify_failure(20.0)
    assert not strategy.can_restart()
    assert "restart-strategy.fixed-delay.attempts" in strategy.exhausted()


def test_failure_rate_counts_only_failures_within_the_interval():
    strategy = FailureRateRestart(max_failures=2, interval=60.0, delay=1.0)
    for now in (0.0, 30.0):
        strategy.notify_failure(now)
        assert strategy.can_restart()
    strategy.notify_failure(59.0)                 # three within 60 s
    assert not strategy.can_restart()
    strategy = FailureRateRestart(max_failures=2, interval=60.0, delay=1.0)
    for now in (0.0, 30.0, 61.0, 95.0):          # never more than two within 60 s
        strategy.notify_failure(now)
        assert strategy.can_restart(), now


def test_exponential_delay_grows_caps_varies_and_resets_after_a_quiet_spell():
    strategy = ExponentialDelayRestart(initial=1.0, max_backoff=5.0, multiplier=2.0,
                                       reset_threshold=100.0, jitter=0.0, attempts=4)
    pauses = []
    for now in (0.0, 1.0, 3.0, 7.0):
        strategy.notify_failure(now)
        assert strategy.can_restart()
        pauses.append(strategy.backoff_time())
    assert pauses == [1.0, 2.0, 4.0, 5.0]
    strategy.notify_failure(12.0)
    assert not strategy.can_restart()              # a fifth failure: four were allowed
    strategy.notify_failure(112.0)                 # 100 s after the last: afresh
    assert strategy.can_restart() and strategy.backoff_time() == 1.0
    jittered = ExponentialDelayRestart(10.0, 60.0, 2.0, 3600.0, 0.1, 5, random=lambda: 1.0)
    jittered.notify_failure(0.0)
    assert jittered.backoff_time() == pytest.approx(11.0)
    jittered = ExponentialDelayRestart(10.0, 60.0, 2.0, 3600.0, 0.1, 5, random=lambda: 0.0)
    jittered.notify_failure(0.0)
    assert jittered.backoff_time() == pytest.approx(9.0)


def test_the_default_strategy_gives_up_on_code_that_always_raises_within_about_a_minute():
    strategy = restart_strategy(RestartSettings.of(Configuration.load()), random=lambda: 1.0)   # longest jitter
    waited, now = 0.0, 0.0
    while True:
        strategy.notify_failure(now)
        if not strategy.can_restart():
            break
        pause = strategy.backoff_time()
        waited += pause
        now += pause + 0.5
    assert 20.0 <= waited <= 60.0, waited


def test_configuration_names_the_strategies_as_flink_does():
    assert isinstance(restart_strategy(RestartSettings.of(Configuration.load(
        overrides=["restart-strategy.type=fixeddelay"]))), FixedDelayRestart)
    with pytest.raises(ValueError, match="not one of none, fixed-delay"):
        Configuration.load(overrides=["restart-strategy.type=sometimes"])


# --- regions -----------------------------------------------------------------------------
def graph_of(job: JobGraph) -> ExecutionGraph:
    return ExecutionGraph(as_received(job))


def two_stage(p: int = 3, blocking: bool = True, mode: ScheduleMode = ScheduleMode.LAZY_FROM_SOURCES,
              ) -> JobGraph:
    """source -FORWARD-> map -HASH (BLOCKING)-> agg -FORWARD-> sink"""
    graph = JobGraph("two-stage", mode)
    src = graph.add_vertex(source("source", p, slot_sharing_group="one"))
    mid = graph.add_vertex(op("map", p, slot_sharing_group="one"))
    agg = graph.add_vertex(op("agg", p, slot_sharing_group="two"))
    sink = graph.add_vertex(op("sink", p, slot_sharing_group="two"))
    graph.connect(src, mid, ShipStrategy.FORWARD)
    graph.connect(mid, agg, ShipStrategy.HASH, ["x"],
                  PartitionType.BLOCKING if blocking else PartitionType.PIPELINED)
    graph.connect(agg, sink, ShipStrategy.FORWARD)
    return graph.resolve(1)


def names(vertices) -> list[str]:
    return sorted(str(v) for v in vertices)


def test_pipelined_regions_stop_at_blocking_exchanges():
    eg = graph_of(two_stage(3))
    regions = set(pipelined_regions(eg).values())
    assert len(regions) == 6                      # 3 source->map chains, 3 agg->sink chains
    assert all(len(r.vertices) == 2 for r in regions)
    eg = graph_of(two_stage(3, blocking=False))
    assert len(set(pipelined_regions(eg).values())) == 1   # a pipelined shuffle joins all


def vertex(eg: ExecutionGraph, name: str, index: int):
    return next(v for v in eg.all_execution_vertices()
                if v.job_vertex.name == name and v.subtask_index == index)


def test_region_failover_restarts_the_failed_region_and_reuses_available_results():
    eg = graph_of(two_stage(3))
    strategy = RestartPipelinedRegion(eg)
    restart = strategy.tasks_to_restart([vertex(eg, "agg", 1)], lambda partition: True)
    assert names(restart) == ["agg (2/3)", "sink (2/3)"]
    # a stage-1 result was lost with its executor: its producer region runs again, and
    # so does every region reading what that one produces
    lost = vertex(eg, "map", 0)
    restart = strategy.tasks_to_restart([vertex(eg, "agg", 1)],
                                        lambda partition: partition.producer is not lost)
    assert names(restart) == ["agg (1/3)", "agg (2/3)", "agg (3/3)", "map (1/3)",
                              "sink (1/3)", "sink (2/3)", "sink (3/3)", "source (1/3)"]
    assert len(RestartAll(eg).tasks_to_restart([vertex(eg, "agg", 1)], lambda p: True)) == 12


# --- the JobMaster -----------------------------------------------------------------------
def harness(graph: JobGraph, *overrides: str) -> Harness:
    config = Configuration.load(overrides=[
        "heartbeat.timeout=50", "heartbeat.interval=10", "job.cancel.timeout=30",
        "task.cancellation.timeout=20", "restart-strategy.type=fixed-delay",
        "restart-strategy.fixed-delay.attempts=2", "restart-strategy.fixed-delay.delay=5",
        *overrides])
    return Harness(graph, config, main=ManualMainThread())


def deployed_now(h: Harness) -> dict[tuple[str, int], object]:
    """The current attempt's deployment of every deployed subtask."""
    current = {v.current.attempt_id for v in h.jm.graph.all_execution_vertices()}
    return {(t.info.vertex_name, t.subtask_index): t for t in h.deployed()
            if t.attempt_id in current}


def run_to_end(h: Harness, only: set[str]) -> None:
    """Report the subtasks of ``only`` RUNNING then FINISHED, as they get deployed (a
    consumer of a pipelined exchange is deployed once its producer has data)."""
    while True:
        todo = [(k, t) for k, t in deployed_now(h).items() if k[0] in only
                and h.jm.graph.attempts[t.attempt_id].state is not FINISHED]
        if not todo:
            return
        for _, tdd in todo:
            h.report(tdd.attempt_id, RUNNING)
            h.report(tdd.attempt_id, FINISHED)


def report_all(h: Harness, state, only=None, only_index: int | None = None) -> None:
    for key, tdd in deployed_now(h).items():
        if (only is None or key[0] in only) and only_index in (None, key[1]):
            h.report(tdd.attempt_id, state)


def test_a_lost_executor_restarts_its_region_after_the_delay_as_new_attempts_in_the_old_slots():
    h = harness(chain(2, ship=ShipStrategy.FORWARD))      # two regions: one per subtask
    h.start()
    h.offer_pending(["te-1", "te-2"])
    report_all(h, RUNNING)
    on_te2 = [e for e in h.jm.graph.current_executions() if e.resource_id == "te-2"]
    assert len(on_te2) == 3
    h.call(h.jm.disconnect_task_executor, "te-2", "TaskExecutor te-2 was lost: killed")
    assert all(e.state is FAILED for e in on_te2)
    assert h.jm.graph.status is JobStatus.RUNNING
    assert h.executors["te-1"].cancelled == [], "the other region goes on untouched"
    details = h.jm.details()
    assert [(x.task, x.resource_id) for x in details.exceptions] == [
        ("source (2/2)", "te-2"), ("map (2/2)", "te-2"), ("sink (2/2)", "te-2")]
    assert "te-2 was lost" in details.exceptions[0].cause
    assert details.restarts == 0
    assert len(h.rm.requests) == 1, \
        "the lost shared slot is asked for at once: its executor starts during the pause"
    h.offer_pending(["te-3"])
    h.jm.main.advance(4.9)
    assert h.executors["te-3"].submitted == [], "nothing restarts before the delay"
    h.jm.main.advance(0.2)
    assert h.rm.requests == {}, "the restart took the slot asked for ahead, and asked no other"
    restarted = [v for v in h.jm.graph.all_execution_vertices() if v.current.attempt_number == 1]
    assert names(restarted) == ["map (2/2)", "sink (2/2)", "source (2/2)"]
    assert all(v.current.resource_id == "te-3" for v in restarted)
    assert h.jm.details().restarts == 1
    report_all(h, FINISHED)
    assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED


def test_a_slot_asked_for_ahead_and_not_yet_there_at_the_restart_is_taken_over_not_asked_twice():
    """The replacement executor is slower than the pause: the restart's request takes
    over the one asked ahead, and the region deploys when that one slot comes."""
    h = harness(chain(2, ship=ShipStrategy.FORWARD))
    h.start()
    h.offer_pending(["te-1", "te-2"])
    report_all(h, RUNNING)
    h.call(h.jm.disconnect_task_executor, "te-2", "TaskExecutor te-2 was lost: killed")
    asked = set(h.rm.requests)
    assert len(asked) == 1
    h.jm.main.advance(5.1)
    assert set(h.rm.requests) == asked, "the restart asked no second slot"
    h.offer_pending(["te-3"])
    restarted = [v for v in h.jm.graph.all_execution_vertices() if v.current.attempt_number == 1]
    assert len(restarted) == 3 and all(v.current.resource_id == "te-3" for v in restarted)
    assert all(v.current.state is ExecutionState.DEPLOYING for v in restarted)


def test_a_restarted_region_goes_whole_when_its_producers_other_subtasks_have_finished():
    """Stage by stage, the union reads the source twice: at once and through a filter.
    Region 1 (one subtask of each) is lost after region 0 finished; once the restarted
    source has data, the union and the filter go again with it. They waited before: the
    source no longer counted as having its slots once one of its subtasks had finished,
    so the filter's result was waited for, which the source, stopped at its full output
    to the union, never let come (found by killing executors under random jobs)."""
    h = harness(diamond())
    h.start()
    h.offer_pending(["te-1", "te-2"])
    report_all(h, RUNNING)
    to_union = next(r.id for r in h.jm.graph.results.values()
                    if (r.producer.name, r.consumer.name) == ("source", "union"))
    for tdd in deployed_now(h).values():
        h.jm.notify_partition_data_available(tdd.attempt_id, to_union)
    h.offer_pending(["te-1", "te-2"])
    report_all(h, RUNNING)
    assert len(deployed_now(h)) == 6
    report_all(h, FINISHED, only_index=0)
    h.call(h.jm.disconnect_task_executor, "te-2", "TaskExecutor te-2 was lost: killed")
    h.jm.main.advance(5.1)
    h.offer_pending(["te-3"])
    again = deployed_now(h)
    assert ("source", 1) in again and h.jm.graph.attempts[
        again[("source", 1)].attempt_id].attempt_number == 1
    h.report(again[("source", 1)].attempt_id, RUNNING)
    h.jm.notify_partition_data_available(again[("source", 1)].attempt_id, to_union)
    h.offer_pending(["te-3"])
    again = deployed_now(h)
    assert {key for key in again if key[1] == 1} == {("source", 1), ("filter", 1), ("union", 1)}
    report_all(h, RUNNING)
    report_all(h, FINISHED)
    assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED


def a_map_failed() -> tuple[Harness, TaskDeploymentDescriptor]:
    """Two regions (one per subtask) running on te-1 and te-2; the first map failed."""
    h = harness(chain(2, ship=ShipStrategy.FORWARD))
    h.start()
    h.offer_pending(["te-1", "te-2"])
    report_all(h, RUNNING)
    failed_map = deployed_now(h)[("map", 0)]
    h.report_failure(failed_map.attempt_id, "map (1/2) failed: ValueError: bad row")
    return h, failed_map


def test_a_failed_task_restarts_its_region_in_its_previous_slot_when_that_is_alive():
    h, failed_map = a_map_failed()
    cancelled = h.executors[h.jm.graph.attempts[failed_map.attempt_id].resource_id].cancelled
    assert len(cancelled) == 2, "the failed subtask's region partners are cancelled"
    for attempt in cancelled:
        h.report(attempt, CANCELED)
    h.jm.main.advance(5)
    assert h.rm.requests == {}, "the region's slot was kept: no new request"
    again = deployed_now(h)
    assert again[("map", 0)].allocation_id == failed_map.allocation_id
    assert h.jm.graph.attempts[again[("map", 0)].attempt_id].attempt_number == 1


def test_an_executor_lost_while_its_subtasks_stop_for_a_due_restart_lets_the_restart_run():
    """The pause is over and the restart waits for the region's subtasks to stop; then
    their executor dies (a host lost): they end FAILED instead of CANCELED, and that
    must let the restart go on as their cancellation would have."""
    h, failed_map = a_map_failed()
    assert len(h.executors["te-1"].cancelled) == 2
    h.jm.main.advance(5)
    assert h.jm.details().restarts == 0, "its partners have not stopped yet"
    h.call(h.jm.disconnect_task_executor, "te-1", "TaskExecutor te-1 was lost: host gone")
    assert h.jm.details().restarts == 1
    h.jm.main.advance(5)
    assert len(h.rm.requests) == 1, "the region asks for a slot anew, its old one is gone"
    h.offer_pending(["te-3"])
    report_all(h, FINISHED)
    assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED


def test_restarts_run_out_and_the_job_fails_naming_the_cause_and_the_attempts():
    h = harness(chain(1), "restart-strategy.fixed-delay.attempts=1")
    h.start()
    h.offer_pending(["te-1"])
    for attempt in range(2):
        report_all(h, RUNNING)
        h.report_failure(deployed_now(h)[("map", 0)].attempt_id, "map (1/1) failed: boom")
        for key, tdd in deployed_now(h).items():
            if key[0] != "map":
                h.report(tdd.attempt_id, CANCELED)
        h.jm.main.advance(5)
    h.jm.main.advance(30)
    result = h.jm.result.result(timeout=0)
    assert result.status is JobStatus.FAILED
    assert "boom" in result.failure and "2 attempts" in result.failure
    assert "restart-strategy.fixed-delay.attempts" in result.failure
    assert result.details.restarts == 1 and len(result.details.exceptions) == 2


def test_no_restart_strategy_fails_the_job_at_the_first_failure():
    h = harness(chain(1), "restart-strategy.type=none")
    h.start()
    h.offer_pending(["te-1"])
    report_all(h, RUNNING)
    h.report_failure(deployed_now(h)[("map", 0)].attempt_id, "map (1/1) failed: boom")
    assert h.jm.graph.status is JobStatus.FAILING
    assert "restart-strategy.type is none" in h.jm.graph.failure


def test_a_non_recoverable_failure_fails_the_job_at_once_saying_why_it_did_not_restart():
    h = harness(chain(1), "restart-strategy.type=fixed-delay",
                "restart-strategy.fixed-delay.attempts=5")
    h.start()
    h.offer_pending(["te-1"])
    report_all(h, RUNNING)
    h.report_failure(deployed_now(h)[("map", 0)].attempt_id,
                     "map (1/1) failed: ContractError: map function 'm' must return a pyarrow "
                     "RecordBatch or Table, got dict", non_recoverable=True)
    assert h.jm.graph.status is JobStatus.FAILING
    assert "got dict (not restarted: a non-recoverable error" in h.jm.graph.failure
    assert h.jm.scheduler.restarts == 0


def test_failures_are_classified_as_flink_does():
    from yarnflow.core.failures import ContractError, FailureKind, NonRecoverableError, classify

    class BadRecord(ValueError):
        pass
    assert classify(ContractError("x")) is FailureKind.NON_RECOVERABLE
    assert classify(NonRecoverableError("x")) is FailureKind.NON_RECOVERABLE
    assert classify(BadRecord("x")) is FailureKind.RECOVERABLE       # user errors restart
    assert classify(OSError("disk")) is FailureKind.RECOVERABLE
    assert classify(BadRecord("x"), ("ValueError",)) is FailureKind.NON_RECOVERABLE  # a base
    qualified = f"{BadRecord.__module__}.{BadRecord.__qualname__}"
    assert classify(BadRecord("x"), (qualified,)) is FailureKind.NON_RECOVERABLE
    assert classify(KeyError("x"), ("ValueError",)) is FailureKind.RECOVERABLE
    conf = Configuration.load(overrides=[
        "restart-strategy.non-recoverable-exceptions=ValueError, mymodule.BadRecord"])
    from yarnflow.conf import options
    assert conf.get(options.NON_RECOVERABLE_EXCEPTIONS) == ("ValueError", "mymodule.BadRecord")
    with pytest.raises(Exception, match="is not an exception type's name"):
        Configuration.load(overrides=["restart-strategy.non-recoverable-exceptions=bad name!"])


def test_cancelling_a_job_that_waits_to_restart_cancels_it_and_nothing_restarts():
    h = harness(chain(1))
    h.start()
    h.offer_pending(["te-1"])
    report_all(h, RUNNING)
    h.call(h.jm.disconnect_task_executor, "te-1", "lost")
    h.jm.cancel()
    assert h.jm.result.result(timeout=0).status is JobStatus.CANCELED
    h.jm.main.advance(60)
    assert h.rm.requests == {} and all(v.current.attempt_number == 0
                                       for v in h.jm.graph.all_execution_vertices())


def test_an_executor_lost_while_idle_fails_nothing():
    h = harness(chain(1))
    h.start()
    h.offer_pending(["te-1"])
    report_all(h, RUNNING)
    h.offer_free_slots({"te-9": 1}, PROFILE)          # a warm executor the job does not use
    h.call(h.jm.disconnect_task_executor, "te-9", "lost while idle")
    assert h.jm.details().exceptions == [] and h.jm.graph.status is JobStatus.RUNNING
    assert h.executors["te-1"].cancelled == []
    report_all(h, FINISHED)
    assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED


def test_losing_a_finished_result_a_running_consumer_needs_reruns_only_its_producer_region():
    graph = two_stage(2)
    for v in graph.vertices.values():          # stage two cannot reuse stage one's slots
        if v.name in ("agg", "sink"):
            v.resources = BIG
    h = harness(graph.resolve(1))
    h.start()
    h.offer_pending(["te-1", "te-2"])
    run_to_end(h, {"source", "map"})
    h.offer_pending(["te-3", "te-4"])
    report_all(h, RUNNING, only={"agg", "sink"})
    stage_one_on_te1 = {str(e.vertex) for e in h.jm.graph.current_executions()
                        if e.resource_id == "te-1"}
    assert len(stage_one_on_te1) == 2
    h.call(h.jm.disconnect_task_executor, "te-1", "TaskExecutor te-1 was lost")
    for key, tdd in deployed_now(h).items():
        if key[0] in ("agg", "sink"):
            h.report(tdd.attempt_id, CANCELED)
    h.jm.main.advance(5)
    h.offer_pending(["te-5", "te-6"])
    attempts = {str(v): v.current.attempt_number for v in h.jm.graph.all_execution_vertices()}
    rerun = {name for name, n in attempts.items() if n == 1}
    # the sinks had not started (no data from agg yet): they stay as they were
    assert rerun == stage_one_on_te1 | {"agg (1/2)", "agg (2/2)"}, attempts
    run_to_end(h, {"source", "map"})
    h.offer_pending(["te-5", "te-6"])
    run_to_end(h, {"agg", "sink"})
    assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED


def test_splits_of_a_failed_source_attempt_are_handed_out_again():
    assigner = InputSplitAssigner(["a", "b", "c", "d"])
    old = [assigner.next_split(requester="old").split for _ in range(2)]
    other = assigner.next_split(requester="other").split
    assert assigner.add_splits_back("old") == 2
    new = []
    while (split := assigner.next_split(requester="new")) is not None:
        new.append(split.split)
    assert len(new) == 3 and set(old) <= set(new)
    assert len(set(new + [other])) == 4, "every split once, none twice"


# --- what a user sees ----------------------------------------------------------------------
def test_restarts_and_the_exception_history_cross_the_wire_and_show_in_the_display():
    from rich.console import Console

    from yarnflow.core.details import ExceptionEntry, JobDetails, SubtaskDetails, VertexDetails
    from yarnflow.client.display import print_summary, progress_table
    from yarnflow.rpc.codec import job_details_from_proto, job_details_to_proto

    lost = ExceptionEntry(1_700_000_000.0, "work (2/4)", 0, "container_e01_0002", "node-3",
                          "TaskExecutor container_e01_0002 was lost: YARN container "
                          "container_e01_0002 ended KILLED: preempted")
    details = JobDetails("job-1", "nightly", JobStatus.RUNNING, 1_700_000_000.0,
                         vertices=[VertexDetails("v", "work", 4, [
                             SubtaskDetails(i, ExecutionState.RUNNING, 1) for i in range(4)])],
                         restarts=1, exceptions=[lost])
    assert job_details_from_proto(job_details_to_proto(details)) == details
    console = Console(record=True, width=200)
    console.print(progress_table(details))
    live = console.export_text()
    assert "nightly [RUNNING, 1 restart]" in live and "last failure: TaskExecutor" in live
    details.status, details.end_time = JobStatus.FINISHED, 1_700_000_030.0
    console = Console(record=True, width=200)
    print_summary(details, console)
    shown = console.export_text()
    assert "FINISHED in 30.00 s, 1 restart" in shown
    assert "work (2/4)" in shown and "container_e01_0002" in shown and "preempted" in shown
