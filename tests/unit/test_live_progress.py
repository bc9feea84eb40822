"""Live progress (issue 34, item 1): an executor reports its running attempts' counts at
a bounded rate, only when they moved; the JobMaster keeps them without letting a late
report set them back; a vertex's progress is its splits or input channels done; the
CLI's live table shows it. Manual clocks, in-memory peers."""
from __future__ import annotations

import pytest
from rich.console import Console

from tests.unit.fakes import RUNNING, Harness, ManualMainThread
from tests.unit.test_scheduler import chain
from tests.unit.test_taskexecutor import Setup, tdd
from yarnflow.client.display import progress_table, subtask_table
from yarnflow.conf import Configuration
from yarnflow.core.details import JobDetails, SubtaskDetails, VertexDetails
from yarnflow.core.messages import TaskExecutionState, TaskMetrics
from yarnflow.core.status import ExecutionState, JobStatus
from yarnflow.taskexecutor.progress import ProgressReports


# --- the executor's side ------------------------------------------------------------
def running(s: Setup, records: int) -> None:
    s.tasks[0].state = ExecutionState.RUNNING
    s.tasks[0].metrics = TaskMetrics(records_in=records, inputs_done=1, inputs_total=4)


def test_progress_is_sent_every_interval_only_when_it_moved():
    s = Setup(**{"metrics.progress.interval": "2 s"})
    s.allocate()
    s.call(s.te.submit_task, tdd())
    running(s, 100)
    s.main.advance(2)
    assert [[(a.attempt_id, a.metrics.records_in) for a in r] for r in s.jm.progress] == \
        [[("attempt-1", 100)]]
    s.main.advance(4)
    assert len(s.jm.progress) == 1, "nothing moved: nothing is sent"
    running(s, 250)
    s.main.advance(2)
    assert s.jm.progress[-1][0].metrics.records_in == 250
    assert s.jm.progress[-1][0].metrics.inputs_total == 4


def test_an_ended_attempt_is_left_to_its_own_report():
    s = Setup(**{"metrics.progress.interval": "1 s"})
    s.allocate()
    s.call(s.te.submit_task, tdd())
    running(s, 10)
    s.main.advance(1)
    s.tasks[0].state = ExecutionState.FINISHED
    s.tasks[0].metrics = TaskMetrics(records_in=20)
    s.main.advance(3)
    assert len(s.jm.progress) == 1


def test_a_zero_interval_turns_live_progress_off():
    s = Setup(**{"metrics.progress.interval": "0 s"})
    s.allocate()
    s.call(s.te.submit_task, tdd())
    running(s, 10)
    s.main.advance(30)
    assert s.jm.progress == []
    assert s.jm.heartbeat_attempts[-1][0].metrics.records_in == 10, \
        "heartbeats still carry the counts"


def test_reports_name_only_the_attempts_that_moved():
    reports = ProgressReports()

    def state(attempt: str, records: int) -> TaskExecutionState:
        return TaskExecutionState(attempt, ExecutionState.RUNNING,
                                  metrics=TaskMetrics(records_in=records))
    first = reports.changed([("jm-1", state("a", 1)), ("jm-2", state("b", 1))])
    assert {jm: [x.attempt_id for x in xs] for jm, xs in first.items()} == \
        {"jm-1": ["a"], "jm-2": ["b"]}
    assert {jm: [x.attempt_id for x in xs] for jm, xs in reports.changed(
        [("jm-1", state("a", 1)), ("jm-2", state("b", 5))]).items()} == {"jm-2": ["b"]}
    reports.changed([("jm-2", state("b", 5))])        # a ended: forgotten
    assert list(reports.changed([("jm-1", state("a", 1))])) == ["jm-1"]


# --- the JobMaster's side -----------------------------------------------------------
@pytest.fixture
def h():
    config = Configuration.load(overrides=["heartbeat.timeout=50", "heartbeat.interval=10",
                                           "restart-strategy.type=none"])
    harness = Harness(chain(1), config, main=ManualMainThread())
    harness.start()
    harness.offer_pending(["te-1"])
    yield harness
    harness.close()


def progress(attempt: str, records: int) -> TaskExecutionState:
    return TaskExecutionState(attempt, ExecutionState.RUNNING,
                              metrics=TaskMetrics(records_in=records, records_out=records))


def test_the_job_master_keeps_the_latest_counts_and_never_goes_back(h):
    attempts = [t.attempt_id for t in h.deployed()]
    for attempt in attempts:
        h.report(attempt, RUNNING)
    h.call(h.jm.report_task_progress, "te-1", [progress(attempts[0], 500)])
    h.call(h.jm.report_task_progress, "te-1", [progress(attempts[0], 300)])   # overtaken
    details = h.jm.details()
    assert details.vertices[0].subtasks[0].metrics.records_in == 500
    assert details.vertices[0].subtasks[0].state is ExecutionState.RUNNING


def test_a_final_reports_produced_bytes_survive_a_progress_report_it_overtook(h):
    """Adaptive execution decides from them; an equal-count progress report that arrives
    after the final one must not take them away."""
    attempt = h.deployed()[0].attempt_id
    h.report(attempt, RUNNING)
    execution = next(e for e in h.jm.graph.all_executions() if e.attempt_id == attempt)
    execution.update_metrics(TaskMetrics(records_out=5, produced_bytes=((1, 2),)))
    h.call(h.jm.report_task_progress, "te-1", [progress(attempt, 5)])   # counts as high
    assert execution.metrics.records_in == 5 and execution.metrics.produced_bytes == ((1, 2),)


def test_progress_of_an_unknown_attempt_or_from_another_executor_is_dropped(h):
    attempt = h.deployed()[0].attempt_id
    h.report(attempt, RUNNING)
    h.call(h.jm.report_task_progress, "te-1", [progress("someone-else", 7)])
    h.call(h.jm.report_task_progress, "te-9", [progress(attempt, 7)])
    assert h.jm.details().vertices[0].subtasks[0].metrics.records_in == 0


def test_progress_changes_no_state(h):
    attempt = h.deployed()[0].attempt_id          # DEPLOYING: its RUNNING report is late
    h.call(h.jm.report_task_progress, "te-1", [progress(attempt, 7)])
    subtask = h.jm.details().vertices[0].subtasks[0]
    assert subtask.state is ExecutionState.DEPLOYING and subtask.metrics.records_in == 7


# --- a vertex's progress, and how the CLI shows it -------------------------------------
def sub(index: int, state: ExecutionState, done: int = 0, total: int = 0,
        records: int = 0) -> SubtaskDetails:
    return SubtaskDetails(index, state, metrics=TaskMetrics(
        records_in=records, records_out=records, inputs_done=done, inputs_total=total))


def test_a_source_is_as_far_as_its_splits_read_of_all_its_splits():
    vertex = VertexDetails("v", "source", 2, [sub(0, ExecutionState.RUNNING, 3, 4),
                                              sub(1, ExecutionState.RUNNING, 2, 3)],
                           splits_total=10)
    assert vertex.progress() == pytest.approx(0.5)


def test_another_vertex_is_as_far_as_its_subtasks_input_channels():
    vertex = VertexDetails("v", "join", 4, [
        sub(0, ExecutionState.FINISHED), sub(1, ExecutionState.RUNNING, 1, 4),
        sub(2, ExecutionState.RUNNING, 0, 4), sub(3, ExecutionState.DEPLOYING)])
    assert vertex.progress() == pytest.approx((1 + 0.25) / 4)


def test_the_live_table_shows_records_and_progress_of_running_subtasks():
    details = JobDetails("j" * 32, "skewed join", JobStatus.RUNNING, vertices=[
        VertexDetails("v", "source", 2, [sub(0, ExecutionState.RUNNING, 1, 2, 1200),
                                         sub(1, ExecutionState.RUNNING, 1, 2, 34)],
                      splits_total=4)])
    console = Console(width=200, record=True)
    console.print(progress_table(details))
    console.print(subtask_table(details))
    text = console.export_text()
    row = next(line for line in text.splitlines() if "source " in line and "%" in line)
    assert "1,234" in row and "50 %" in row
    assert "1/2" in text


# --- test only: a slow host on purpose (test.taskmanager.slow-hosts) --------------------
def test_a_slow_host_stretches_work_but_not_waiting():
    from yarnflow.core.clock import ManualClock
    from yarnflow.taskexecutor.straggler import Stretch, slowdown_of
    assert slowdown_of("nm-2=10, nm-3=2.5", "nm-3") == 2.5
    assert slowdown_of("nm-2=10", "nm-1") == slowdown_of("", "nm-1") == 1.0
    clock, waits = ManualClock(), []
    stretch = Stretch(10, waits.append, clock)
    clock.advance(0.5)                 # the operator works half a second
    stretch.work_done()
    clock.advance(30)                  # then waits for its next input
    stretch.resume()
    clock.advance(0.2)
    stretch.work_done()
    assert waits == pytest.approx([4.5, 1.8])
    healthy: list[float] = []
    Stretch(1, healthy.append, clock).work_done()
    assert healthy == []
