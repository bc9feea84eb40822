"""What a job looks like from outside: its details while it runs and after (Flink's
JobDetailsInfo), and its result once it ended. The JobMaster builds them, the
Dispatcher keeps and archives them, every client shows them; the wire form is made
only by ``yarnflow.rpc.codec``."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from yarnflow.core.blocklist import BlockedNode
from yarnflow.core.ids import AllocationID, JobID, ResourceID
from yarnflow.core.messages import OperatorMetrics, TaskMetrics
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import ExecutionState, JobStatus


@dataclass
class SubtaskDetails:
    index: int
    state: ExecutionState
    attempt: int = 0
    resource_id: ResourceID = ResourceID("")
    allocation_id: AllocationID = AllocationID("")
    metrics: TaskMetrics = field(default_factory=TaskMetrics)
    error: str = ""
    # when the current attempt entered each state it went through (ExecutionState name ->
    # epoch seconds, as the JobMaster saw it), like Flink's per-subtask timestamps
    state_timestamps: dict[str, float] = field(default_factory=dict)
    # a source's input splits read on a host that stores them, and those read elsewhere
    splits_local: int = 0
    splits_remote: int = 0
    host: str = ""          # the host of the executor the current attempt runs on
    # the slot the current attempt runs in (the sum of the subtasks sharing it), and the
    # worker spec of its executor (slots x slot profile: on YARN, its container)
    slot_profile: ResourceSpec | None = None
    worker_spec: str = ""


@dataclass(frozen=True)
class VertexInput:
    producer: str           # the producing vertex's name
    ship: str               # its ship strategy: forward, hash, broadcast, rebalance


@dataclass
class VertexDetails:
    id: str
    name: str
    parallelism: int
    subtasks: list[SubtaskDetails] = field(default_factory=list)
    inputs: list[VertexInput] = field(default_factory=list)      # by input index
    splits_total: int = 0       # a source's input splits; 0 for other vertices
    # adaptive batch execution: what was decided at run time and from which measured
    # bytes ("" for a vertex whose parallelism was fixed at submission)
    decision: str = ""
    # a chained vertex's operators, head first (empty: one operator, ``name``)
    operators: list[str] = field(default_factory=list)

    def runs(self, operator: str) -> bool:
        """Whether the operator named so is this vertex's own or one of its chain's."""
        return operator in self.operators if self.operators else operator == self.name

    def operator_totals(self) -> list[OperatorMetrics]:
        """Its operators, head first, each with its subtasks' figures summed (Flink's
        per-operator metrics under a chained vertex); a vertex of one operator gives
        that one, with the vertex's own figures."""
        if not self.operators:
            metrics = [s.metrics for s in self.subtasks]
            return [OperatorMetrics(self.name, sum(m.records_in for m in metrics),
                                    sum(m.records_out for m in metrics),
                                    sum(m.bytes_in for m in metrics),
                                    sum(m.bytes_out for m in metrics))]
        totals = {name: [0, 0, 0, 0] for name in self.operators}
        for subtask in self.subtasks:
            for op in subtask.metrics.operators:
                if op.name in totals:
                    for i, value in enumerate((op.records_in, op.records_out, op.bytes_in,
                                               op.bytes_out)):
                        totals[op.name][i] += value
        return [OperatorMetrics(name, records_in, records_out, bytes_in, bytes_out)
                for name, (records_in, records_out, bytes_in, bytes_out) in totals.items()]

    def key_ranges(self) -> list[tuple[SubtaskDetails, str, str]]:
        """A sort's ranges in order: each subtask that sorted rows, with its range's
        first and last key (its bytes are the subtask's bytes in)."""
        return [(s, s.metrics.key_range[0], s.metrics.key_range[1]) for s in self.subtasks
                if len(s.metrics.key_range) == 2]

    def spilled(self) -> tuple[int, int]:
        """Bytes and files its subtasks' operators spilled to local disk."""
        return (sum(s.metrics.spilled_bytes for s in self.subtasks),
                sum(s.metrics.spill_files for s in self.subtasks))

    def spilled_too_much(self) -> bool:
        """It spilled more than it read: its slots are too small for what it holds (a
        hash join's build side, an aggregate's groups, a sort's rows)."""
        spilled, _ = self.spilled()
        return spilled > 0 and spilled > sum(s.metrics.bytes_in for s in self.subtasks)

    def operator_progress(self, operator: str) -> float:
        """How far one of its operators is, 0..1: done where it finished (or its subtask
        did), elsewhere as far as the vertex's input, short of done until it finished
        everywhere (an aggregate ending a chain still works once its input ended). A
        vertex's one operator is as far as the vertex."""
        if not self.operators:
            return self.progress()
        if not self.subtasks:
            return 0.0
        done = sum(1 for s in self.subtasks if s.state is ExecutionState.FINISHED or any(
            op.name == operator and op.finished for op in s.metrics.operators))
        if done == len(self.subtasks):
            return 1.0
        return max(done / len(self.subtasks), min(self.progress(), 0.99))

    def progress(self) -> float:
        """How far the vertex is, 0..1: a source by the splits its subtasks finished out
        of all its splits (which subtask reads a split is decided as they go), another
        vertex by its subtasks' input channels, a finished subtask counting whole."""
        if not self.subtasks:
            return 0.0
        if self.splits_total:
            done = sum(s.metrics.inputs_done for s in self.subtasks)
            return min(1.0, done / self.splits_total)
        return sum(1.0 if s.state is ExecutionState.FINISHED
                   else s.metrics.inputs_done / s.metrics.inputs_total if s.metrics.inputs_total
                   else 0.0 for s in self.subtasks) / len(self.subtasks)


@dataclass(frozen=True)
class ExceptionEntry:
    """One failure the job recovered from, or the one that ended it (Flink's exception
    history): when, which subtask attempt, where it ran, and why."""
    timestamp: float            # epoch seconds, as the JobMaster saw it
    task: str                   # "vertex (i/p)", or "" for a failure of no single task
    attempt: int
    resource_id: ResourceID            # the TaskExecutor: on YARN, its container
    host: str
    cause: str


class SpeculationOutcome(enum.Enum):
    RUNNING = "running"
    WON = "won"            # it finished first: its output is the subtask's
    LOST = "lost"          # the original (or another attempt) finished first; cancelled
    FAILED = "failed"      # it failed; the original ran on
    CANCELED = "canceled"  # the subtask was restarted, or the job ended, first


@dataclass
class SpeculativeAttempt:
    """A second attempt started beside a slow subtask (Flink's FLIP-168): why, where
    both ran, and how it ended."""
    task: str                 # "vertex (i/p)"
    attempt: int
    original_attempt: int
    original_host: str
    started: float            # epoch seconds
    reason: str               # why the original was found slow
    host: str = ""            # "" until it had a slot
    outcome: SpeculationOutcome = SpeculationOutcome.RUNNING
    note: str = ""            # why it ended so

    def end(self, outcome: SpeculationOutcome, note: str) -> None:
        """It ends once; an ended one does not change."""
        if self.outcome is not SpeculationOutcome.RUNNING:
            raise ValueError(f"speculative attempt {self.attempt} of {self.task} ended "
                             f"{self.outcome.value} already; it cannot end {outcome.value}")
        self.outcome, self.note = outcome, note


@dataclass
class JobDetails:
    job_id: JobID
    name: str
    status: JobStatus
    start_time: float = 0.0
    end_time: float = 0.0       # 0 while the job runs
    vertices: list[VertexDetails] = field(default_factory=list)
    failure: str = ""           # the root cause, one line per failed subtask
    failure_detail: str = ""    # with tracebacks
    restarts: int = 0           # failovers the job went through
    exceptions: list[ExceptionEntry] = field(default_factory=list)   # oldest first
    # the ApplicationMaster attempt running the job (YARN's; 1 on local): a job shown
    # in attempt 2 was run again after its first ApplicationMaster died
    application_attempt: int = 1
    blocked_hosts: list[BlockedNode] = field(default_factory=list)   # the job's blocklist
    speculations: list[SpeculativeAttempt] = field(default_factory=list)   # oldest first
    # the application's own, one line each, while the job is live (e.g. its delegation
    # tokens end soon and cannot be renewed)
    warnings: list[str] = field(default_factory=list)
    # a streaming job's checkpoints, in the shape of Flink's /jobs/:id/checkpoints
    # (counts, latest completed, failed and restored, history); empty for a batch job
    checkpoints: dict[str, Any] = field(default_factory=dict)

    def vertex_running(self, operator: str) -> VertexDetails:
        """The vertex that runs the operator named so, alone or in a chain."""
        found = [v for v in self.vertices if v.runs(operator)]
        if len(found) != 1:
            raise KeyError(f"{len(found)} vertices of job {self.name!r} run an operator "
                           f"named {operator!r}")
        return found[0]

    def operator_metrics(self, operator: str) -> OperatorMetrics:
        """The records and bytes of the operator named so, summed over its subtasks,
        whether it runs alone or chained."""
        return next(m for m in self.vertex_running(operator).operator_totals()
                    if m.name == operator)


@dataclass
class JobResult:
    """How a job ended (Flink's JobResult): what a JobMaster publishes and a client's
    ``wait`` returns."""
    job_id: JobID
    status: JobStatus
    failure: str
    failure_detail: str
    details: JobDetails
    # a collect sink's rows, one Arrow IPC stream per subtask in subtask order
    collected: tuple[bytes, ...] = ()

    @classmethod
    def of(cls, details: JobDetails) -> "JobResult":
        """The result an ended job's details tell."""
        return cls(details.job_id, details.status, details.failure, details.failure_detail,
                   details)


@dataclass(frozen=True)
class ExecutorDetails:
    """A TaskExecutor as the ResourceManager sees it (Flink's TaskManagerInfo): STARTING
    from the container request until it registers, then REGISTERED. ``container_id`` and
    ``node`` are YARN's; empty on ``local``."""
    resource_id: ResourceID
    state: str
    worker_spec: str
    container: ResourceSpec | None
    slot_profile: ResourceSpec | None
    slots_total: int
    slots_used: int
    host: str = ""
    container_id: str = ""
    node: str = ""
    waiting: str = ""          # why a STARTING one is not placed yet (fit_check.py)


@dataclass(frozen=True)
class SessionOverview:
    history_dir: str            # where ended jobs are archived
    container_sizes: str        # the ladder, as the session describes it
    executors: int              # registered TaskExecutors
    free_slots: int
    total_slots: int
    running_jobs: int
    finished_jobs: int
