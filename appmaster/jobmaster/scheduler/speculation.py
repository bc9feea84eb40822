"""Speculative execution of batch jobs (Flink's FLIP-168, Spark's spark.speculation).

Every ``slow-task-detector.check-interval`` the JobMaster looks, in each stage whose
inputs and outputs are all BLOCKING, for slow subtasks (``SlowTaskDetector``: measured
against the stage's finished subtasks, once ``…baseline-ratio`` of them have finished).
A slow subtask's host is reported to the blocklist (``block-slow-node-duration``), and
the subtask gets further attempts, up to ``…max-concurrent-executions``, each in a slot
on another host: one where a subtask of the stage finished first, never a free slot
where the stage's subtasks only run so far (that host may be as slow, only not found
out yet: a new slot is asked for instead). A source's attempts are handed the same
splits (``splits.py``).

The first attempt to finish wins: it becomes the subtask's current attempt, so its
partitions are the ones consumers read (they are deployed only once the stage has
finished, BLOCKING) and its files the ones a sink commits (``JobOutputs.commit`` takes
one attempt per subtask). The others are cancelled; their partial output was never
read and is discarded with them. A speculative attempt that fails is dropped; an
original that fails while a speculative attempt runs hands the subtask over to it.
The scheduler (``default_scheduler.py``) routes the state reports; this decides when
to speculate, where, and what each speculation came to. Main thread only.
"""
from __future__ import annotations

import functools
import logging
import statistics
from concurrent.futures import Future
from typing import Callable, Iterator

from yarnflow.appmaster.jobmaster.settings import SlowTaskSettings, SpeculationSettings
from yarnflow.appmaster.jobmaster.executiongraph import (Execution, ExecutionGraph,
                                                         ExecutionJobVertex, ExecutionState,
                                                         ExecutionVertex, JobStatus)
from yarnflow.appmaster.jobmaster.scheduler.allocator import LogicalSlot
from yarnflow.appmaster.jobmaster.scheduler.slot_sharing import ExecutionSlotSharingGroup
from yarnflow.appmaster.jobmaster.slotpool import PhysicalSlot, SlotPool, SlotPreferences
from yarnflow.core.details import SpeculationOutcome, SpeculativeAttempt
from yarnflow.core.jobgraph import PartitionType, ScheduleMode
from yarnflow.rpc.endpoint import MainThreadExecutor, ScheduledTask

log = logging.getLogger(__name__)

_RUNNING = frozenset({ExecutionState.DEPLOYING, ExecutionState.INITIALIZING,
                      ExecutionState.RUNNING})


def speculatable(ejv: ExecutionJobVertex) -> bool:
    """Whether a stage's subtasks may run twice: only when nothing reads their output
    before they finish, and they read nothing that is still being written."""
    return all(r.partition_type is PartitionType.BLOCKING for r in (*ejv.inputs, *ejv.produced))


class SlowTaskDetector:
    """Flink's ExecutionTimeBasedSlowTaskDetector, made to read live progress. Once
    ``…baseline-ratio`` of a stage has finished, a running subtask that has run at
    least as long as their median time (and ``…baseline-lower-bound``) is slow when
    its rate (records a second, from its live progress) is under
    1/``…baseline-multiplier`` of theirs; one with no progress reported yet is slow,
    as in Flink, past ``…baseline-multiplier`` times their median time. By rate, a
    straggler is seen as soon as its stage's others are done, not half a stage later,
    and a subtask that is only given more data (skew) is not taken for a slow one."""

    def __init__(self, settings: SlowTaskSettings) -> None:
        self._ratio = settings.ratio
        self._multiplier = settings.multiplier
        self._lower_bound = settings.lower_bound

    def slow_subtasks(self, ejv: ExecutionJobVertex, now: float
                      ) -> Iterator[tuple[ExecutionVertex, str]]:
        """The stage's running subtasks that are slow, each with why (one line)."""
        done = [v.current for v in ejv.task_vertices if v.current.state is ExecutionState.FINISHED]
        if not done or len(done) < self._ratio * ejv.parallelism:
            return
        times = [_ran(e, e.state_timestamps[ExecutionState.FINISHED]) for e in done]
        median = statistics.median(times)
        rates = [_processed(e) / t for e, t in zip(done, times) if t > 0 and _processed(e)]
        median_rate = statistics.median(rates) if rates else 0.0
        baseline = max(self._lower_bound, median * self._multiplier)
        peers = f"the {len(done)} of {ejv.parallelism} subtasks that finished"
        for vertex in ejv.task_vertices:
            current = vertex.current
            ran = _ran(current, now)
            if current.state not in _RUNNING or ran < max(self._lower_bound, median):
                continue
            if current.metrics is not None and median_rate:
                rate = _processed(current) / ran
                if rate * self._multiplier < median_rate:
                    yield vertex, (f"it did {rate:.3g} records/s in {ran:.1f} s, under "
                                   f"1/{self._multiplier:g} of the median {median_rate:.3g} "
                                   f"records/s of {peers}")
            elif ran > baseline:
                yield vertex, (f"it ran {ran:.1f} s, over {self._multiplier:g} × the median "
                               f"{median:.1f} s of {peers}" + (
                                   f" (and the lower bound {self._lower_bound:g} s)"
                                   if baseline == self._lower_bound else ""))


def _processed(execution: Execution) -> int:
    """Records the attempt has read (a source: those it has emitted)."""
    m = execution.metrics
    return 0 if m is None else m.records_in or m.records_out


def _hosts_of_stage(ejv: ExecutionJobVertex) -> tuple[frozenset[str], frozenset[str]]:
    """Where the stage's attempts ran: the hosts one of them finished on (proven: a
    speculative attempt goes there first), and the hosts where they only run so far
    (unproven: as slow, maybe, as the host being left, only not found out yet; a free
    slot there is not taken, a new slot is asked for instead)."""
    proven: set[str] = set()
    running: set[str] = set()
    for vertex in ejv.task_vertices:
        for e in vertex.executions():
            if e.slot is not None:
                if e.state is ExecutionState.FINISHED:
                    proven.add(e.slot.location.host)
                elif e.state in _RUNNING:
                    running.add(e.slot.location.host)
    return frozenset(proven), frozenset(running - proven)


def _ran(execution: Execution, until: float) -> float:
    started = execution.state_timestamps.get(ExecutionState.DEPLOYING, until)
    return until - started


class SpeculativeExecutions:
    def __init__(self, settings: SpeculationSettings, main: MainThreadExecutor, graph: ExecutionGraph,
                 slot_pool: SlotPool, group_of: Callable[[ExecutionVertex], ExecutionSlotSharingGroup],
                 deploy: Callable[[Execution], None],
                 task_slow: Callable[[str, str], "Future[object] | None"]) -> None:
        """``deploy`` an attempt that holds its slot; ``task_slow(host, why)``: tell the
        blocklist, done once it has settled (None: nothing to wait for)."""
        self.enabled = settings.enabled and \
            graph.schedule_mode is ScheduleMode.LAZY_FROM_SOURCES
        if settings.enabled and not self.enabled:
            log.warning("job %s runs EAGER: execution.batch.speculative.enabled has no effect "
                        "(a batch job's consumers must be deployed once their inputs are done: "
                        "Pipeline(schedule_mode='LAZY_FROM_SOURCES'))", graph.job_id[:8])
        self._max = settings.max_concurrent
        self._interval = settings.check_interval
        self._detector = SlowTaskDetector(settings.detector)
        # the stages that may run twice, found once: the check runs every second
        self._stages = [ejv for ejv in graph.vertices_topologically() if speculatable(ejv)]
        self._main = main
        self._graph = graph
        self._pool = slot_pool
        self._group_of = group_of
        self._deploy = deploy
        self._task_slow = task_slow
        self.attempts: list[SpeculativeAttempt] = []      # for the job's details
        self._born: dict[Execution, SpeculativeAttempt] = {}   # attempts started here
        # attempts whose slot is their own, not a shared slot's: the speculative ones,
        # until one wins and takes the shared slot's place (``promote``)
        self._owned: set[Execution] = set()
        self._timer: ScheduledTask | None = None

    def start(self) -> None:
        if self.enabled and self._timer is None:
            self._timer = self._main.schedule_periodic(self._interval, self.check)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # --- starting attempts ------------------------------------------------------------
    def check(self) -> None:
        if self._graph.status is not JobStatus.RUNNING:
            return
        now = self._graph.clock.time()
        for ejv in self._stages:
            for vertex, why in list(self._detector.slow_subtasks(ejv, now)):
                if len(vertex.executions()) < self._max:
                    self._speculate(vertex, why, now)

    def _speculate(self, vertex: ExecutionVertex, why: str, now: float) -> None:
        original = vertex.current
        host = original.slot.location.host if original.slot is not None else ""
        more = self._max - len(vertex.executions())
        log.info("%s is slow on %s (%s): starting %d more attempt%s elsewhere", original,
                 host or "?", why, more, "" if more == 1 else "s")
        blocked = self._task_slow(host, why) if host else None
        for _ in range(more):
            execution = vertex.add_speculative()
            self._graph.register_attempt(execution)
            execution.transition(ExecutionState.SCHEDULED)
            record = SpeculativeAttempt(vertex.name_with_index, execution.attempt_number,
                                        original.attempt_number, host, now, why)
            self.attempts.append(record)
            self._born[execution] = record
            if blocked is None:
                self._allocate(execution)
            else:   # asked once the slow host is blocked, so no slot there answers it
                blocked.add_done_callback(functools.partial(self._allocate_after, execution))

    def _allocate_after(self, execution: Execution, _: "Future[object]") -> None:
        self._allocate(execution)

    def _allocate(self, execution: Execution) -> None:
        if execution.state is not ExecutionState.SCHEDULED:
            return
        group = self._group_of(execution.vertex)
        proven, unproven = _hosts_of_stage(execution.vertex.job_vertex)
        avoid = frozenset(e.slot.location.host for e in execution.vertex.executions()
                          if e.slot is not None) | unproven
        slot = self._pool.allocate_available_elsewhere(group.profile, avoid, prefer=proven)
        if slot is not None:
            self._got(execution, slot)
            return
        self._pool.request_new_slot(group.profile, SlotPreferences(input_hosts=tuple(
            sorted(proven - avoid)))).add_done_callback(
            lambda fut: self._on_main(self._arrived, execution, fut))

    def _arrived(self, execution: Execution, fut: "Future[PhysicalSlot]") -> None:
        if fut.cancelled():
            return
        error = fut.exception()
        if error is None:
            self._got(execution, fut.result())
        elif execution.state is ExecutionState.SCHEDULED:   # the original runs on
            log.info("speculative %s got no slot: %s", execution, error)
            execution.failure = f"it got no slot: {error}"
            execution.transition(ExecutionState.FAILED)
            self.release_slot(execution)

    def _got(self, execution: Execution, slot: PhysicalSlot) -> None:
        if execution.state is not ExecutionState.SCHEDULED:   # ended while it waited
            self._pool.release_slot(slot.allocation_id)
            return
        execution.slot = LogicalSlot(slot, self._group_of(execution.vertex))
        self._owned.add(execution)
        self._born[execution].host = slot.location.host
        self._deploy(execution)

    def _on_main(self, fn: Callable[..., None], *args: object) -> None:
        if self._main.in_main_thread():
            fn(*args)
        else:
            self._main.execute(fn, *args)

    # --- how they end -----------------------------------------------------------------
    def promote(self, winner: Execution) -> None:
        """A speculative attempt finished first: it becomes the current one, and its slot
        the subtask's shared slot (the next stage's subtasks of that shared slot run
        there, beside its output, not on the slow host), while the loser keeps the old
        shared slot as its own until it has stopped."""
        vertex = winner.vertex
        loser = vertex.current
        vertex.promote(winner)
        group = self._group_of(vertex)
        if winner.slot is not None and loser.slot is not None and \
                group.slot is loser.slot.physical and winner in self._owned:
            group.slot = winner.slot.physical
            self._owned.discard(winner)
            self._owned.add(loser)

    def finished_first(self, execution: Execution) -> list[Execution]:
        """``execution``, the subtask's current attempt, finished first; returns its
        other attempts, to be cancelled."""
        others = [e for e in execution.vertex.speculative if not e.state.is_terminal]
        took = _ran(execution, execution.state_timestamps[ExecutionState.FINISHED])
        won = self._born.get(execution)
        if won is not None:
            slower = ", ".join(f"attempt {e.attempt_number}" for e in others) or "the others"
            won.end(SpeculationOutcome.WON, f"it finished first, in {took:.1f} s; {slower} "
                    "cancelled, their output discarded")
        for other in others:
            lost = self._born.get(other)
            if lost is not None and lost.outcome is SpeculationOutcome.RUNNING:
                lost.end(SpeculationOutcome.LOST, f"attempt {execution.attempt_number} "
                         f"finished first, in {took:.1f} s; this one cancelled, its output discarded")
        return others

    def take_over(self, failed: Execution) -> Execution | None:
        """The current attempt ``failed``: a speculative attempt still running becomes
        the current one (returned); None when there is none."""
        vertex = failed.vertex
        heir = next((e for e in vertex.speculative if not e.state.is_terminal
                     and e.state is not ExecutionState.CANCELING
                     and e.resource_id != failed.resource_id), None)
        if heir is not None:
            vertex.promote(heir)
            log.info("%s failed; speculative %s takes over", failed, heir)
        return heir

    def release_slot(self, execution: Execution) -> bool:
        """An attempt ended: True when its slot was its own (it goes back to the pool)
        or it never got one; False when it ran in its shared slot, the allocator's."""
        if execution in self._owned:
            self._owned.discard(execution)
            assert execution.slot is not None
            self._pool.release_slot(execution.slot.allocation_id)
        elif execution.slot is not None or execution not in self._born:
            return False
        record = self._born.get(execution)
        if record is not None and record.outcome is SpeculationOutcome.RUNNING:
            if execution.state is ExecutionState.FAILED:
                record.end(SpeculationOutcome.FAILED, execution.failure.partition("\n")[0])
            elif execution.state is not ExecutionState.FINISHED:
                record.end(SpeculationOutcome.CANCELED,
                           "the subtask was restarted, or the job ended, before it finished")
        return True
