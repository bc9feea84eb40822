"""Speculative execution (issue 34, item 2): a real JobMaster on a manual main thread
and clock, with in-memory executors and ResourceManager. A slow subtask of a BLOCKING
stage gets a second attempt on another host once most of its stage finished; the
first to finish is what consumers read and a sink commits; the loser is cancelled;
a source's attempts read the same splits."""
from __future__ import annotations

import cloudpickle
import pytest

from tests.unit.fakes import RUNNING, Harness, ManualMainThread
from tests.unit.test_scheduler import op, source
from yarnflow.appmaster.jobmaster.settings import SlowTaskSettings
from yarnflow.appmaster.jobmaster.splits import InputSplitAssigner
from yarnflow.conf import Configuration
from yarnflow.core.details import SpeculationOutcome
from yarnflow.core.jobgraph import JobGraph, PartitionType, ScheduleMode, ShipStrategy
from yarnflow.core.status import ExecutionState, JobStatus
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph
from yarnflow.appmaster.jobmaster.scheduler.deployment import shuffle_descriptors
from yarnflow.appmaster.jobmaster.scheduler.speculation import SlowTaskDetector
from yarnflow.core.clock import ManualClock
from yarnflow.core.messages import TaskMetrics
from yarnflow.core.messages import AskAgain
from yarnflow.rpc.codec import (as_received, job_details_from_proto, job_details_to_proto,
                                shuffle_descriptors_from_bytes)

FINISHED, CANCELED = ExecutionState.FINISHED, ExecutionState.CANCELED
SPECULATION = ["execution.batch.speculative.enabled=true",
               "slow-task-detector.check-interval=1 s",
               "slow-task-detector.execution-time.baseline-ratio=0.6",
               "slow-task-detector.execution-time.baseline-lower-bound=2 s",
               "execution.batch.speculative.block-slow-node-duration=60 s",
               "heartbeat.timeout=1000", "heartbeat.interval=500"]
HOSTS = {"te-slow": "nm-slow", "te-a": "nm-a", "te-b": "nm-b"}


def batch(p: int = 3) -> JobGraph:
    """source → work → sink, every exchange BLOCKING: each stage may be speculated."""
    graph = JobGraph("batch", ScheduleMode.LAZY_FROM_SOURCES)
    src, work, sink = (graph.add_vertex(source("source", p)), graph.add_vertex(op("work", p)),
                       graph.add_vertex(op("sink", p)))
    graph.connect(src, work, ShipStrategy.REBALANCE, partition_type=PartitionType.BLOCKING)
    graph.connect(work, sink, ShipStrategy.REBALANCE, partition_type=PartitionType.BLOCKING)
    return graph.resolve(1)


def harness(*extra: str, graph: JobGraph | None = None) -> Harness:
    h = Harness(graph or batch(), Configuration.load(overrides=[*SPECULATION, *extra]),
                main=ManualMainThread())
    h.start()
    h.offer_pending(list(HOSTS), HOSTS)
    return h


def vertex(h: Harness, name: str):
    return next(v for v in h.jm.graph.job_vertices.values() if v.name == name)


def run_all(h: Harness, name: str, state=FINISHED, but: tuple[int, ...] = ()) -> None:
    for v in vertex(h, name).task_vertices:
        h.report(v.current.attempt_id, RUNNING)
        if v.subtask_index not in but:
            h.report(v.current.attempt_id, state)


def on_host(h: Harness, name: str, host: str) -> int:
    """The subtask of ``name`` whose current attempt runs on ``host``."""
    return next(v.subtask_index for v in vertex(h, name).task_vertices
                if v.current.slot.location.host == host)


def sinks(h: Harness) -> int:
    """The sink subtasks deployed, once the healthy executors offered what was asked."""
    h.offer_pending(["te-a", "te-b"], HOSTS)
    return len([t for t in h.deployed() if t.info.vertex_name == "sink"])


@pytest.fixture
def slow():
    """The job with its work stage running, the subtask on nm-slow still running after
    the others finished in 10 s, and 16 s gone: over 1.5 × their median."""
    h = harness()
    run_all(h, "source")
    h.offer_pending(list(HOSTS), HOSTS)
    index = on_host(h, "work", "nm-slow")
    for v in vertex(h, "work").task_vertices:
        h.report(v.current.attempt_id, RUNNING)
    h.jm.main.advance(10)
    run_all(h, "work", but=(index,))
    h.jm.main.advance(6)
    yield h, vertex(h, "work").task_vertices[index]
    h.close()


def test_a_slow_subtask_gets_a_second_attempt_on_another_host_and_its_host_is_blocked(slow):
    h, v = slow
    assert [n.host for n in h.rm.blocked] == ["nm-slow"]
    assert "slow: it ran 16.0 s, over 1.5 × the median 10.0 s" in h.rm.blocked[0].cause
    assert len(v.speculative) == 1
    second = v.speculative[0]
    assert second.attempt_number == 1 and second.state is ExecutionState.DEPLOYING
    assert second.slot.location.host != "nm-slow"
    deployed = [t for t in h.deployed() if t.attempt_id == second.attempt_id]
    assert deployed and deployed[0].subtask_index == v.subtask_index
    [record] = h.jm.details().speculations
    assert (record.task, record.attempt, record.original_attempt, record.original_host,
            record.outcome) == (v.name_with_index, 1, 0, "nm-slow", SpeculationOutcome.RUNNING)
    h.jm.main.advance(5)                           # no third: at most 2 attempts run
    assert len(v.speculative) == 1 and len(h.jm.details().speculations) == 1


def test_the_speculative_attempt_that_finishes_first_wins_and_the_slow_one_is_cancelled(slow):
    h, v = slow
    original, second = v.current, v.speculative[0]
    h.report(second.attempt_id, RUNNING)
    h.report(second.attempt_id, FINISHED)
    assert v.current is second and original.state is ExecutionState.CANCELING
    assert original.attempt_id in h.executors[original.slot.location.resource_id].cancelled
    h.report(original.attempt_id, CANCELED)
    # the sink reads the winner's partition: its executor and attempt number
    assert sinks(h) == 3
    part = shuffle_descriptors(vertex(h, "sink").task_vertices[0].consumed[0])   # as sent
    descriptors = shuffle_descriptors_from_bytes(part.data)
    assert descriptors.producer_attempt[v.subtask_index] == 1
    address = descriptors.data_addresses[descriptors.producer_location[v.subtask_index]]
    assert address == second.slot.location.data_address
    # the next stage's subtask of that shared slot runs beside the winner's output, not
    # on the slow host
    assert not [t for t in h.executors["te-slow"].submitted if t.info.vertex_name == "sink"]
    # a late FINISHED from the cancelled loser changes nothing
    h.report(original.attempt_id, FINISHED)
    assert v.current is second and original.state is CANCELED
    run_all(h, "sink")
    assert h.jm.graph.status is JobStatus.FINISHED
    [record] = h.jm.details().speculations
    assert record.outcome is SpeculationOutcome.WON and "finished first" in record.note


def test_the_original_that_finishes_first_wins_and_the_speculative_one_is_cancelled(slow):
    h, v = slow
    original, second = v.current, v.speculative[0]
    h.report(second.attempt_id, RUNNING)
    h.report(original.attempt_id, FINISHED)
    assert v.current is original and second.state is ExecutionState.CANCELING
    h.report(second.attempt_id, CANCELED)
    [record] = h.jm.details().speculations
    assert record.outcome is SpeculationOutcome.LOST and "attempt 0 finished first" in record.note
    assert sinks(h) == 3


def test_the_job_does_not_end_while_a_loser_is_still_being_cancelled(slow):
    h, v = slow
    original, second = v.current, v.speculative[0]
    h.executors[original.slot.location.resource_id].has_attempts = True
    h.report(second.attempt_id, RUNNING)
    h.report(second.attempt_id, FINISHED)
    run_all(h, "sink")
    assert original.state is ExecutionState.CANCELING
    assert h.jm.graph.status is JobStatus.RUNNING
    h.report(original.attempt_id, CANCELED)
    assert h.jm.graph.status is JobStatus.FINISHED


def test_a_failed_speculative_attempt_is_dropped_and_the_original_runs_on(slow):
    h, v = slow
    original, second = v.current, v.speculative[0]
    h.report_failure(second.attempt_id, "disk full")
    assert v.current is original and original.state is RUNNING
    assert h.jm.scheduler.restarts == 0
    [record] = h.jm.details().speculations
    assert record.outcome is SpeculationOutcome.FAILED and record.note == "disk full"
    h.report(original.attempt_id, FINISHED)
    assert sinks(h) == 3


def test_an_original_that_fails_hands_its_subtask_over_to_the_speculative_attempt(slow):
    h, v = slow
    original, second = v.current, v.speculative[0]
    h.report(second.attempt_id, RUNNING)
    h.report_failure(original.attempt_id, "the disk went away")
    assert v.current is second and h.jm.scheduler.restarts == 0
    assert "attempt 1 runs on" in h.jm.details().exceptions[-1].cause
    h.report(second.attempt_id, FINISHED)
    assert sinks(h) == 3


def test_a_restart_stops_every_attempt_of_the_subtask(slow):
    h, v = slow
    original, second = v.current, v.speculative[0]
    h.report(second.attempt_id, RUNNING)
    h.call(h.jm.scheduler.executor_lost, second.resource_id, "container lost")
    # the speculative attempt was lost: dropped; the original still runs
    assert v.current is original and second.state is ExecutionState.FAILED
    h.call(h.jm.scheduler.executor_lost, original.resource_id, "container lost")
    assert original.state is ExecutionState.FAILED and h.jm.scheduler.restarts == 0
    h.jm.main.advance(2)                          # the restart's pause
    assert h.jm.scheduler.restarts == 1
    assert v.current.attempt_number == 2 and not v.speculative


def test_nothing_is_speculated_when_off_or_before_enough_subtasks_finished():
    h = harness("execution.batch.speculative.enabled=false")
    run_all(h, "source", but=(0,))
    h.jm.main.advance(120)
    assert not h.rm.blocked and not h.jm.details().speculations
    h.close()
    h = harness("slow-task-detector.execution-time.baseline-ratio=1.0")
    run_all(h, "source", but=(0,))                # 2 of 3 finished: 1.0 needs all
    h.jm.main.advance(120)
    assert not h.jm.details().speculations
    h.close()


def test_pipelined_stages_are_never_speculated():
    graph = JobGraph("stream", ScheduleMode.LAZY_FROM_SOURCES)
    src, sink = graph.add_vertex(source("source", 3)), graph.add_vertex(op("sink", 3))
    graph.connect(src, sink, ShipStrategy.REBALANCE)          # PIPELINED
    h = harness(graph=graph.resolve(1))
    run_all(h, "source", but=(0,))
    h.jm.main.advance(120)
    assert not h.jm.details().speculations
    h.close()


def test_a_speculative_source_attempt_reads_the_same_splits_and_any_new_one_is_shared():
    assigner = InputSplitAssigner(list(range(6)), parallelism=2)

    def read(requester: str, subtask: int) -> int | None:
        answer = assigner.next_split("h", requester=requester, subtask=subtask)
        assert not isinstance(answer, AskAgain)
        return None if answer is None else cloudpickle.loads(answer.split)
    first = [read("a0", 0), read("a0", 0)]
    # the speculative attempt of subtask 0 replays its splits, in order ...
    assert [read("a1", 0), read("a1", 0)] == first
    late = read("a1", 0)                 # ... and a new split it takes joins subtask 0's
    assert late is not None and late not in first
    assert read("a0", 0) == late         # list, which the original then reads too
    other = [read("b0", 1) for _ in range(3)]
    assert read("a0", 0) is None and read("a1", 0) is None    # closed for both attempts
    assert sorted(first + [late] + other) == list(range(6))   # no split twice, none lost
    # a restart gives the subtask's splits back once, whichever attempt it names
    assert assigner.add_splits_back("a1") == 3
    again = [read("a2", 0) for _ in range(3)]
    assert sorted(again) == sorted(first + [late]) and read("a2", 0) is None


def test_speculations_travel_in_job_details(slow):
    h, _ = slow
    details = job_details_from_proto(job_details_to_proto(h.jm.details()))
    assert details.speculations == h.jm.details().speculations


# --- the detector ----------------------------------------------------------------------
def stage(records: list[int | None], finished: list[bool], clock: ManualClock):
    """A 'work' stage of len(records) subtasks, deployed now; after 10 s the finished
    ones end; ``records`` each has processed so far (None: no progress reported)."""
    graph = ExecutionGraph(as_received(batch(len(records))), clock)
    ejv = next(v for v in graph.job_vertices.values() if v.name == "work")
    for v in ejv.task_vertices:
        for state in (ExecutionState.SCHEDULED, ExecutionState.DEPLOYING, RUNNING):
            v.current.transition(state)
    clock.advance(10)
    for v, n, done in zip(ejv.task_vertices, records, finished):
        if n is not None:
            v.current.update_metrics(TaskMetrics(records_in=n))
        if done:
            v.current.transition(FINISHED)
    return ejv


def detector(*extra: str) -> SlowTaskDetector:
    return SlowTaskDetector(SlowTaskSettings.of(Configuration.load(overrides=[*SPECULATION, *extra])))


def test_by_rate_a_straggler_is_slow_as_soon_as_its_peers_are_done_and_a_big_subtask_is_not():
    clock = ManualClock()
    # peers did 1000 records in 10 s; at 10 s the straggler did 100, the big one 1000 of
    # its 4000 (as fast as its peers, only given more)
    ejv = stage([1000, 1000, 1000, 100, 1000], [True, True, True, False, False], clock)
    slow = list(detector().slow_subtasks(ejv, clock.time()))
    assert [v.subtask_index for v, _ in slow] == [3]
    assert "it did 10 records/s in 10.0 s, under 1/1.5 of the median 100 records/s" in slow[0][1]
    clock.advance(30)     # at 40 s, past 1.5 × the median: the big one is still not slow
    for v, n in zip(ejv.task_vertices[3:], (400, 4000)):
        v.current.update_metrics(TaskMetrics(records_in=n))
    assert [v.subtask_index for v, _ in detector().slow_subtasks(ejv, clock.time())] == [3]


def test_without_progress_a_subtask_is_slow_past_the_multiplier_times_the_median():
    clock = ManualClock()
    ejv = stage([1000, 1000, 1000, None], [True, True, True, False], clock)
    assert not list(detector().slow_subtasks(ejv, clock.time()))
    clock.advance(5.1)                                    # 15.1 s > 1.5 × 10 s
    [(vertex, why)] = detector().slow_subtasks(ejv, clock.time())
    assert vertex.subtask_index == 3 and why.startswith("it ran 15.1 s, over 1.5 × the median 10.0 s")
    # the lower bound holds either rule back
    assert not list(detector("slow-task-detector.execution-time.baseline-lower-bound=60 s")
                    .slow_subtasks(ejv, clock.time()))


def test_the_cli_names_each_speculative_attempt(slow):
    from rich.console import Console

    from yarnflow.client.display import speculation_table
    h, v = slow
    second = v.speculative[0]
    h.report(second.attempt_id, RUNNING)
    h.report(second.attempt_id, FINISHED)
    console = Console(width=400, record=True)
    console.print(speculation_table(h.jm.details()))
    text = console.export_text()
    assert v.name_with_index in text and "nm-slow" in text and "won" in text
    assert "slow: it ran 16.0 s" in text and "finished first" in text


def test_a_speculative_attempt_goes_where_its_stage_finished_not_where_it_only_runs():
    """A second attempt on a host as slow as the first, only not found out yet, would be
    lost: it goes to a host where a subtask of its stage finished, and where such a host
    has no free slot it asks for one there rather than take a free slot on a host where
    the stage only runs (the YARN flake: a slow sink outrun on another slow host)."""
    h = harness("slow-task-detector.execution-time.baseline-ratio=0.3")
    run_all(h, "source")
    h.offer_pending(list(HOSTS), HOSTS)
    work = vertex(h, "work").task_vertices
    on = {v.current.slot.location.host: v for v in work}
    for v in work:
        h.report(v.current.attempt_id, RUNNING)
    h.jm.main.advance(10)
    h.report(on["nm-a"].current.attempt_id, FINISHED)
    on["nm-a"].current.update_metrics(TaskMetrics(records_in=1000))     # 100 records/s
    on["nm-b"].current.update_metrics(TaskMetrics(records_in=900))      # on pace, not slow
    on["nm-slow"].current.update_metrics(TaskMetrics(records_in=50))
    pool = h.jm.slot_pool
    profile = h.jm.allocator.group_of(on["nm-a"]).profile
    # nm-a's freed slot is taken; nm-b has a free one
    assert pool.allocate_available_elsewhere(profile, frozenset({"nm-b", "nm-slow"})) is not None
    h.offer_free_slots({"te-b": 1}, profile)
    h.rm.requests.clear()
    h.jm.main.advance(2)

    [second] = on["nm-slow"].speculative
    assert second.state is ExecutionState.SCHEDULED and second.slot is None
    [(allocation_id, _)] = h.rm.requests.items()
    assert h.rm.hosts[allocation_id] == ("nm-a",)
    h.offer_pending(["te-a"], HOSTS)
    assert second.slot.location.host == "nm-a"
    assert not on["nm-b"].speculative
    h.close()
