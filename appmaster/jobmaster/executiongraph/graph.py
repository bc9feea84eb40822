"""ExecutionJobVertex → ExecutionVertex → Execution, and the results between them.

An ALL_TO_ALL edge is one ConsumedPartitionGroup shared by every consumer subtask,
so a P × P shuffle costs O(P) objects, not O(P²) (Flink 1.13's fix, FLINK-21110).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from yarnflow.core.deployment import ConsumerRead, InputGateDescriptor, SharedPart, TaskInformation

from yarnflow.appmaster.jobmaster.executiongraph.execution import Execution
from yarnflow.core.clock import SYSTEM_CLOCK, Clock
from yarnflow.core.messages import TaskMetrics
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.user_code import UserCode

if TYPE_CHECKING:     # the operators import pyarrow, which scheduling does not need
    from yarnflow.core.operators.base import Operator
from yarnflow.core.status import (
    JOB_TRANSITIONS, ExecutionState, JobStatus, check_transition)
from yarnflow.core.jobgraph import (DistributionPattern, JobEdge, JobGraph, JobVertex,
                                    PartitionType, ScheduleMode, ShipStrategy, result_id)


class IntermediateResult:
    """The data one JobEdge carries: one partition per producer subtask."""

    __slots__ = ("id", "edge", "producer", "consumer", "partitions", "partition_type", "ship",
                 "keys", "num_subpartitions", "distribution", "all_consumers_group", "store",
                 "consumer_reads")

    def __init__(self, edge: JobEdge, producer: "ExecutionJobVertex",
                 consumer: "ExecutionJobVertex", adaptive_subpartitions: int = 128) -> None:
        self.id = result_id(producer.id, consumer.id, edge.target_input)
        self.edge = edge
        self.producer = producer
        self.consumer = consumer
        self.partition_type: PartitionType = edge.partition_type
        self.ship: ShipStrategy = edge.ship
        self.keys = edge.keys
        self.distribution = edge.distribution
        if self.distribution is not DistributionPattern.ALL_TO_ALL:
            self.num_subpartitions = 1
        elif consumer.adaptive:
            # the consumer's parallelism is decided once this result is written: its
            # producers write the most subpartitions it may get, and each consumer
            # subtask reads a contiguous range of them (one, for a broadcast)
            self.num_subpartitions = 1 if self.ship is ShipStrategy.BROADCAST \
                else adaptive_subpartitions
        else:
            self.num_subpartitions = consumer.parallelism
        self.partitions = [IntermediateResultPartition(self, i)
                           for i in range(producer.parallelism)]
        self.all_consumers_group: ConsumedPartitionGroup | None = None
        # BLOCKING on the cluster file system: the result's directory there (set by the
        # JobMaster); empty: each partition stays with its producer's executor
        self.store = ""
        # an adaptive consumer's reads, per consumer subtask (ALL_TO_ALL); empty: each
        # reads the subpartition of its own index from every producer
        self.consumer_reads: tuple[ConsumerRead, ...] = ()

    def is_consumable(self) -> bool:
        """Whether consumers of this result may be deployed (LAZY_FROM_SOURCES); never
        while its producer's parallelism is still undecided."""
        return self.producer.initialized and all(p.is_consumable() for p in self.partitions)


class IntermediateResultPartition:
    __slots__ = ("result", "index", "has_data", "finished")

    def __init__(self, result: IntermediateResult, index: int) -> None:
        self.result = result
        self.index = index
        self.has_data = False
        self.finished = False

    @property
    def producer(self) -> "ExecutionVertex":
        return self.result.producer.task_vertices[self.index]

    def is_consumable(self) -> bool:
        if self.result.partition_type is PartitionType.BLOCKING:
            return self.finished
        return self.has_data or self.finished


class ConsumedPartitionGroup:
    """The partitions of one result that a consumer subtask reads. For ALL_TO_ALL every
    consumer shares the same instance (and its cached shuffle descriptors)."""

    __slots__ = ("result", "partition_indexes", "cached_descriptors", "cached_gate")

    def __init__(self, result: IntermediateResult, partition_indexes: range) -> None:
        self.result = result
        self.partition_indexes = partition_indexes
        self.cached_descriptors: SharedPart | None = None
        self.cached_gate: InputGateDescriptor | None = None

    def partitions(self) -> Iterator[IntermediateResultPartition]:
        partitions = self.result.partitions
        return (partitions[i] for i in self.partition_indexes)

    def __len__(self) -> int:
        return len(self.partition_indexes)


class ExecutionJobVertex:
    def __init__(self, graph: "ExecutionGraph", job_vertex: JobVertex) -> None:
        self.graph = graph
        self.job_vertex = job_vertex
        self.id = job_vertex.id
        self.name = job_vertex.name
        self.configured_parallelism: int = job_vertex.parallelism or 1
        # adaptive batch execution: no subtasks until its inputs are written and
        # ``ExecutionGraph.initialize`` gives it the parallelism decided from them
        self.adaptive = job_vertex.adaptive
        self.parallelism: int = 0 if self.adaptive else self.configured_parallelism
        # how, and from what, its parallelism was decided (adaptive only; shown)
        self.decision: Any = None
        # adaptive slot memory: its subtasks' slot profile, sized from what they read,
        # in shared slots of their own (a stage after a BLOCKING exchange never runs at
        # the same time as its producers, so it shares nothing with them)
        self.sized_profile: ResourceSpec | None = None
        self.sized_group = ""          # those shared slots' group: its stage's own
        self.sized_exact = False       # only slots of that very size serve them
        # what its subtasks run; a source's becomes its readers once its splits are listed
        self.operator: UserCode[Operator] = job_vertex.operator
        self.produced: list[IntermediateResult] = []
        self.inputs: list[IntermediateResult] = []
        # what every subtask is deployed with alike (built at the first deployment)
        self.task_information: TaskInformation | None = None
        self.task_vertices = [ExecutionVertex(self, i) for i in range(self.parallelism)]

    @property
    def initialized(self) -> bool:
        return self.parallelism > 0

    @property
    def slot_sharing_group(self) -> str:
        return self.sized_group or self.job_vertex.slot_sharing_group or "default"

    @property
    def co_location_group(self) -> str | None:
        return self.job_vertex.co_location_group

    @property
    def is_source(self) -> bool:
        return not self.inputs

    def __repr__(self) -> str:
        return f"ExecutionJobVertex({self.name}, p={self.parallelism})"


class ExecutionVertex:
    __slots__ = ("job_vertex", "subtask_index", "current", "speculative", "prior_executions",
                 "consumed", "_name")

    def __init__(self, job_vertex: ExecutionJobVertex, subtask_index: int) -> None:
        self.job_vertex = job_vertex
        self.subtask_index = subtask_index
        self.current = Execution(self, 0)
        # attempts started beside ``current`` because it ran slow; the first of them all
        # to finish becomes ``current`` (its output is the one consumers read)
        self.speculative: list[Execution] = []
        self.prior_executions: list[Execution] = []
        self.consumed: list[ConsumedPartitionGroup] = []   # one per input, in input order
        self._name: str | None = None

    @property
    def name_with_index(self) -> str:
        if self._name is None:
            self._name = (f"{self.job_vertex.name} ({self.subtask_index + 1}/"
                          f"{self.job_vertex.parallelism})")
        return self._name

    def executions(self) -> list[Execution]:
        """Its attempts that may still run: the current one and any speculative ones."""
        return [self.current, *self.speculative] if self.speculative else [self.current]

    def add_speculative(self) -> Execution:
        """A new attempt beside the current one (which has not ended)."""
        if self.current.state.is_terminal:
            raise RuntimeError(f"{self.current} has ended; it cannot be speculated")
        numbers = [e.attempt_number for e in (*self.prior_executions, *self.executions())]
        execution = Execution(self, max(numbers) + 1)
        self.speculative.append(execution)
        return execution

    def promote(self, execution: Execution) -> None:
        """``execution``, a speculative attempt, becomes the current one; the current one
        becomes one of the speculative (to be cancelled, or ended already)."""
        self.speculative.remove(execution)
        self.speculative.append(self.current)
        self.current = execution

    def produced_partitions(self) -> list[IntermediateResultPartition]:
        return [result.partitions[self.subtask_index] for result in self.job_vertex.produced]

    def prior_allocation_id(self) -> str | None:
        """The slot the last attempt ran in: a restart prefers it (state stays local)."""
        for execution in reversed(self.prior_executions):
            if execution.allocation_id is not None:
                return execution.allocation_id
        return None

    def prior_resource_id(self) -> str | None:
        for execution in reversed(self.prior_executions):
            if execution.resource_id is not None:
                return execution.resource_id
        return None

    def restore_finished(self, attempt_number: int, timestamps: dict[ExecutionState, float],
                         metrics: TaskMetrics | None) -> Execution:
        """Take over an attempt that finished under an earlier ApplicationMaster (its
        results are on the cluster file system): the vertex starts out FINISHED."""
        if self.current.state is not ExecutionState.CREATED or self.prior_executions:
            raise RuntimeError(f"{self.current} has run in this ApplicationMaster; only a "
                               "subtask that has not can be restored")
        self.current = Execution.finished_earlier(self, attempt_number, timestamps, metrics)
        for partition in self.produced_partitions():
            partition.has_data = partition.finished = True
        return self.current

    def reset_for_new_execution(self) -> Execution:
        """Start a fresh attempt after the current one ended (a restart)."""
        if any(not e.state.is_terminal for e in self.executions()):
            raise RuntimeError(f"{self.current} has not ended; it cannot be restarted")
        number = max(e.attempt_number for e in self.executions()) + 1
        self.prior_executions.extend([*self.speculative, self.current])   # its slot last: preferred
        self.speculative = []
        self.current = Execution(self, number)
        for partition in self.produced_partitions():
            partition.has_data = partition.finished = False
        return self.current

    def __repr__(self) -> str:
        return self.name_with_index


class ExecutionGraph:
    """The runtime view of a job; every mutation happens on the JobMaster's main thread."""

    def __init__(self, job_graph: JobGraph, clock: Clock = SYSTEM_CLOCK,
                 adaptive_max_parallelism: int = 128) -> None:
        self.clock = clock
        self.adaptive_max_parallelism = adaptive_max_parallelism
        # grows whenever subtasks are added (an adaptive vertex initialized): what is
        # derived from the whole graph (pipelined regions) is derived again
        self.version = 0
        self.job_id = job_graph.job_id
        self.name = job_graph.name
        self.schedule_mode = job_graph.schedule_mode
        self.status = JobStatus.CREATED
        self.status_timestamps: dict[JobStatus, float] = {JobStatus.CREATED: clock.time()}
        self.failure: str = ""
        self.failure_detail: str = ""
        self.job_vertices: dict[str, ExecutionJobVertex] = {}
        self.attempts: dict[str, Execution] = {}
        self.results: dict[str, IntermediateResult] = {}
        self._build(job_graph)

    def _build(self, job_graph: JobGraph) -> None:
        for vertex in job_graph.topological_order():
            self.job_vertices[vertex.id] = ExecutionJobVertex(self, vertex)
        for edge in sorted(job_graph.edges, key=lambda e: e.target_input):
            producer = self.job_vertices[edge.source.id]
            consumer = self.job_vertices[edge.target.id]
            result = IntermediateResult(edge, producer, consumer, self.adaptive_max_parallelism)
            self.results[result.id] = result
            producer.produced.append(result)
            consumer.inputs.append(result)
            if result.distribution is DistributionPattern.ALL_TO_ALL:
                group = ConsumedPartitionGroup(result, range(producer.parallelism))
                result.all_consumers_group = group
                for task in consumer.task_vertices:
                    task.consumed.append(group)
            else:  # POINTWISE with equal parallelism (validated): subtask i reads partition i
                for task in consumer.task_vertices:
                    task.consumed.append(
                        ConsumedPartitionGroup(result, range(task.subtask_index,
                                                             task.subtask_index + 1)))
        for ejv in self.job_vertices.values():
            for task in ejv.task_vertices:
                self.attempts[task.current.attempt_id] = task.current
        if any(ejv.adaptive for ejv in self.job_vertices.values()):
            # a vertex is decided once its inputs are written: consumers go then
            self.schedule_mode = ScheduleMode.LAZY_FROM_SOURCES

    def initialize(self, ejv: ExecutionJobVertex, parallelism: int,
                   reads: dict[str, tuple[ConsumerRead, ...]]) -> None:
        """Give an adaptive vertex its decided parallelism and subtasks (Flink's
        ExecutionJobVertex.initialize): its inputs' producers are decided already, and
        ``reads`` says, per ALL_TO_ALL input result, what each subtask reads of it."""
        if ejv.initialized:
            raise RuntimeError(f"{ejv.name} has its parallelism ({ejv.parallelism}) already")
        if parallelism < 1 or any(not r.producer.initialized for r in ejv.inputs):
            raise RuntimeError(f"{ejv.name} cannot be initialized with parallelism "
                               f"{parallelism} before its producers are")
        ejv.parallelism = parallelism
        ejv.task_vertices = [ExecutionVertex(ejv, i) for i in range(parallelism)]
        for result in ejv.inputs:
            if result.distribution is DistributionPattern.ALL_TO_ALL:
                group = result.all_consumers_group
                assert group is not None
                result.consumer_reads = reads.get(result.id, ())
                if result.consumer_reads and len(result.consumer_reads) != parallelism:
                    raise RuntimeError(f"{ejv.name}: {len(result.consumer_reads)} reads of "
                                       f"{result.id} for {parallelism} subtasks")
                group.cached_descriptors, group.cached_gate = None, None
                for task in ejv.task_vertices:
                    task.consumed.append(group)
            else:
                for task in ejv.task_vertices:
                    task.consumed.append(ConsumedPartitionGroup(
                        result, range(task.subtask_index, task.subtask_index + 1)))
        for result in ejv.produced:
            result.partitions = [IntermediateResultPartition(result, i) for i in range(parallelism)]
            if result.all_consumers_group is not None:
                result.all_consumers_group.partition_indexes = range(parallelism)
                result.all_consumers_group.cached_descriptors = None
        for task in ejv.task_vertices:
            self.attempts[task.current.attempt_id] = task.current
        self.version += 1

    # --- queries ---------------------------------------------------------------------
    def vertices_topologically(self) -> list[ExecutionJobVertex]:
        return list(self.job_vertices.values())

    def all_execution_vertices(self) -> Iterator[ExecutionVertex]:
        for ejv in self.job_vertices.values():
            yield from ejv.task_vertices

    def current_executions(self) -> Iterator[Execution]:
        for vertex in self.all_execution_vertices():
            yield vertex.current

    def all_executions(self) -> Iterator[Execution]:
        """Every attempt that may still run: the current ones and the speculative ones."""
        for vertex in self.all_execution_vertices():
            yield from vertex.executions()

    def all_finished(self) -> bool:
        """Every subtask finished, and every speculative attempt beside it has ended (a
        loser still writing must not outlive the job)."""
        return all(ejv.initialized for ejv in self.job_vertices.values()) and \
            all(e.state is ExecutionState.FINISHED if e is e.vertex.current
                else e.state.is_terminal for e in self.all_executions())

    def all_terminal(self) -> bool:
        return all(e.state.is_terminal for e in self.all_executions())

    # --- mutations -------------------------------------------------------------------
    def transition(self, target: JobStatus) -> None:
        check_transition(JOB_TRANSITIONS, self.status, target, lambda: f"job {self.job_id}")
        self.status = target
        self.status_timestamps[target] = self.clock.time()

    def register_attempt(self, execution: Execution, replaces: Execution | None = None) -> None:
        if replaces is not None:
            self.attempts.pop(replaces.attempt_id, None)
        self.attempts[execution.attempt_id] = execution
