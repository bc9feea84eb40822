"""The JobGraph: what a client submits and a JobMaster expands into an ExecutionGraph.

Vertices carry an operator (user code: ``yarnflow.core.user_code``; the wire form is
``yarnflow.rpc.codec``), a parallelism, a
ResourceSpec, a slot sharing group and an optional co-location group; edges carry how
records are distributed. ``resolve`` applies defaults and seed 000's slot-sharing
inheritance; ``validate`` refuses, with the vertex and the fix named, every graph
the runtime could not run.
"""
from __future__ import annotations

import enum
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from yarnflow.core.ids import JobID
from yarnflow.core.estimates import Estimate
from yarnflow.core.failures import ContractError
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.shared_slot_profile import SlotConcurrency
from yarnflow.core.user_code import UserCode

if TYPE_CHECKING:    # the operators import pyarrow, which a graph's reader may not need
    import pyarrow as pa

    from yarnflow.core.operators.base import Operator, OutputCommitter

log = logging.getLogger(__name__)

DEFAULT_SLOT_SHARING_GROUP = "default"


class DistributionPattern(enum.IntEnum):
    POINTWISE = 0
    ALL_TO_ALL = 1


class ShipStrategy(enum.IntEnum):
    FORWARD = 0
    HASH = 1
    BROADCAST = 2
    REBALANCE = 3
    # each row carries its place in a global order, a fraction in [0, 1) in RANGE_COLUMN
    # (a sort's range partitioner gave it): subpartition floor(place * n), the column
    # dropped. The edge's keys are the sort's columns, for those who read the plan.
    RANGE = 4

    @property
    def distribution(self) -> DistributionPattern:
        return DistributionPattern.POINTWISE if self is ShipStrategy.FORWARD \
            else DistributionPattern.ALL_TO_ALL


RANGE_COLUMN = "__yarnflow_range"


class PartitionType(enum.IntEnum):
    PIPELINED = 0
    BLOCKING = 1


class ChainingStrategy(enum.IntEnum):
    """Where an operator may sit in a chain of operators that run as one task (Flink's
    ``ChainingStrategy``), from the most to the least permissive: an operator's own
    (``Operator.chaining``), made stricter by the user's (``disable_chaining()``,
    ``start_new_chain()``)."""
    ALWAYS = 0     # may run in its producer's task, its input pushed to it a batch at a time
    HEAD = 1       # starts a chain: not in its producer's task; its consumers may join it
    NEVER = 2      # a task of its own


class ScheduleMode(enum.IntEnum):
    EAGER = 0
    LAZY_FROM_SOURCES = 1


class InvalidPipelineError(ValueError):
    """A pipeline the runtime cannot run; the message names the vertex and the fix."""

    def __init__(self, vertex: str, problem: str, fix: str) -> None:
        super().__init__(f"invalid pipeline at vertex '{vertex}': {problem}. Fix: {fix}")
        self.vertex = vertex


def path_error(vertex: str, err: Exception) -> InvalidPipelineError:
    """A data path's error (its message ends in ``. Fix: ...``) as the vertex's."""
    problem, _, fix = str(err).partition(". Fix: ")
    return InvalidPipelineError(vertex, problem, fix or "check the path")


@dataclass(frozen=True)
class AdaptiveJoin:
    """A join whose strategy is decided at run time from its inputs' measured bytes
    (adaptive batch execution): which inputs may be broadcast or held as the build side
    (a left outer join keeps every left row once: only its right side), which may be
    split when one of its partitions is skewed (the side whose rows each go to exactly
    one subtask: a left outer join's left side), and the broadcast threshold."""
    buildable: tuple[int, ...] = (0, 1)
    splittable: tuple[int, ...] = (0, 1)
    broadcast_threshold: int = 0       # 0: never broadcast (strategy 'hash')


@dataclass(eq=False)
class JobVertex:
    name: str
    operator: UserCode[Operator]
    parallelism: int | None = None
    resources: ResourceSpec | None = None
    slot_sharing_group: str | None = None
    co_location_group: str | None = None
    num_inputs: int = 0
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    uses_spark: bool = False
    # A sink's output committer (commit(job_id) / abort(job_id)), run by the JobMaster
    # when the job ends, so its output appears whole or not at all.
    committer: UserCode[OutputCommitter] | None = None
    # A sink whose subtasks' rows go back to the client through the JobMaster (collect)
    collect: bool = False
    # The planner's estimate of its output (rows, bytes); client-side, for the plan.
    estimate: Estimate | None = None
    # Its output's columns where the client could know them (None: unknown);
    # client-side, checked against every column an operator names.
    schema: "pa.Schema | None" = None
    # Adaptive batch execution: the parallelism is decided at run time, from the bytes
    # its BLOCKING inputs measured, or follows its FORWARD producer's; ``parallelism``
    # is then only the configured one the decision is reported against.
    adaptive: bool = False
    # an adaptive join's choices left to the run time (None: not such a join)
    join: AdaptiveJoin | None = None
    # The user's chaining setting (None: the operator's own); client-side.
    chaining: ChainingStrategy | None = None
    # A chained vertex's operators' names, head first (empty: one operator, ``name``)
    operator_names: tuple[str, ...] = ()

    @property
    def is_source(self) -> bool:
        return self.num_inputs == 0

    @property
    def operators(self) -> tuple[str, ...]:
        """The names of the operators it runs, head first."""
        return self.operator_names or (self.name,)


def consumer_key(consumer_id: str, target_input: int) -> str:
    """Which input of which vertex an edge feeds: with its producer's id, the name of the
    intermediate result it carries; a chain routes its operators' output by it."""
    return f"{consumer_id}.{target_input}"


def result_id(producer_id: str, consumer_id: str, target_input: int) -> str:
    """The id of the intermediate result an edge carries: unique in its job."""
    return f"{producer_id}->{consumer_key(consumer_id, target_input)}"


def consumer_key_of(result: str) -> str:
    """``consumer_key`` of a ``result_id``."""
    return result.split("->", 1)[1]


@dataclass(eq=False)
class JobEdge:
    source: JobVertex
    target: JobVertex
    ship: ShipStrategy
    keys: tuple[str, ...] = ()
    partition_type: PartitionType = PartitionType.PIPELINED
    target_input: int = 0
    # the operator of a chained source vertex that feeds it ("": its only or last one)
    source_operator: str = ""

    @property
    def distribution(self) -> DistributionPattern:
        return self.ship.distribution

    @property
    def producer_name(self) -> str:
        """The operator whose output the edge carries, by name."""
        return self.source_operator or self.source.operators[-1]

    @property
    def pipelined(self) -> bool:
        return self.partition_type is PartitionType.PIPELINED

    @property
    def waits_for_every_producer(self) -> bool:
        """Whether each consumer subtask starts only after the producer subtask in its
        own shared slot has finished: a BLOCKING edge, all to all, or forward between
        equal parallelisms (subtask i reads subtask i, and both are in shared slot i)."""
        if self.partition_type is not PartitionType.BLOCKING:
            return False
        return self.distribution is DistributionPattern.ALL_TO_ALL or \
            self.source.parallelism == self.target.parallelism


class JobGraph:
    """The job as the runtime takes it: vertices (operators, or chains of them) and the
    edges between them, each with its ship strategy and partition type. A pipeline
    makes one (``Pipeline.job_graph()``), planned and checked; users rarely build one
    by hand."""

    def __init__(self, name: str = "yarnflow job",
                 schedule_mode: ScheduleMode = ScheduleMode.EAGER,
                 job_id: JobID | None = None) -> None:
        self.name = name
        self.schedule_mode = schedule_mode
        self.job_id: JobID = job_id or JobID(uuid.uuid4().hex)
        self.vertices: dict[str, JobVertex] = {}
        self.edges: list[JobEdge] = []
        # The Spark JVM's non-heap memory (taskmanager.spark.jvm-overhead), which a slot
        # hosting Spark operators needs on top of what they declare.
        self.spark_overhead_mb = 0
        # job-level options the client set (conf/job_level.py): a session's JobMaster
        # applies them over the session's configuration
        self.job_configuration: dict[str, str] = {}
        # How the planner resolved each join (vertex id -> JoinPlan); client-side.
        self.join_plans: dict[str, Any] = {}

    # --- building --------------------------------------------------------------------
    def add_vertex(self, vertex: JobVertex) -> JobVertex:
        """Add ``vertex`` (keyed by its id) and return it."""
        self.vertices[vertex.id] = vertex
        return vertex

    def connect(self, source: JobVertex, target: JobVertex, ship: ShipStrategy,
                keys: Iterable[str] = (), partition_type: PartitionType = PartitionType.PIPELINED,
                target_input: int = 0, source_operator: str = "") -> JobEdge:
        """An edge from ``source`` into input ``target_input`` of ``target``."""
        edge = JobEdge(source, target, ship, tuple(keys), partition_type, target_input,
                       source_operator)
        self.edges.append(edge)
        return edge

    def inputs_of(self, vertex: JobVertex) -> list[JobEdge]:
        """The edges into ``vertex``, in the order of its inputs."""
        return sorted((e for e in self.edges if e.target is vertex), key=lambda e: e.target_input)

    def outputs_of(self, vertex: JobVertex) -> list[JobEdge]:
        """The edges out of ``vertex``."""
        return [e for e in self.edges if e.source is vertex]

    def sources(self) -> list[JobVertex]:
        """The vertices with no input."""
        return [v for v in self.vertices.values() if not self.inputs_of(v)]

    def vertex_running(self, operator: str) -> JobVertex:
        """The vertex that runs the operator named so: its own, or the chain it was
        folded into (a user names operators; chaining decides the vertices)."""
        found = [v for v in self.vertices.values() if operator in v.operators]
        if len(found) != 1:
            raise KeyError(f"{len(found)} vertices run an operator named {operator!r}")
        return found[0]

    def topological_order(self) -> list[JobVertex]:
        """Vertices, producers before consumers; a cycle is an InvalidPipelineError."""
        indegree = {v.id: 0 for v in self.vertices.values()}
        for edge in self.edges:
            indegree[edge.target.id] += 1
        ready = [v for v in self.vertices.values() if indegree[v.id] == 0]
        order: list[JobVertex] = []
        while ready:
            vertex = ready.pop(0)
            order.append(vertex)
            for edge in self.outputs_of(vertex):
                indegree[edge.target.id] -= 1
                if indegree[edge.target.id] == 0:
                    ready.append(edge.target)
        if len(order) != len(self.vertices):
            stuck = next(v for v in self.vertices.values() if indegree[v.id] > 0)
            raise InvalidPipelineError(
                stuck.name, "the graph has a cycle through this vertex (its input depends on "
                "its own output)", "remove the edge that feeds a downstream result back into an "
                "upstream operator; yarnflow runs acyclic batch pipelines")
        return order

    # --- defaults and validation -------------------------------------------------------
    def resolve(self, default_parallelism: int) -> "JobGraph":
        """Fill unset parallelism and slot sharing groups (seed 000's inheritance rule)."""
        for vertex in self.topological_order():
            if vertex.parallelism is None:
                vertex.parallelism = default_parallelism
            if vertex.slot_sharing_group is None:
                groups = {e.source.slot_sharing_group for e in self.inputs_of(vertex)}
                vertex.slot_sharing_group = groups.pop() if len(groups) == 1 \
                    else DEFAULT_SLOT_SHARING_GROUP
        return self

    def slot_sharing_groups(self) -> dict[str, list[JobVertex]]:
        """Each slot sharing group's name and its vertices."""
        groups: dict[str, list[JobVertex]] = {}
        for vertex in self.vertices.values():
            groups.setdefault(vertex.slot_sharing_group or DEFAULT_SLOT_SHARING_GROUP,
                              []).append(vertex)
        return groups

    def slot_profile(self, group: str, default: ResourceSpec) -> ResourceSpec:
        """The group's largest shared slot: its first, which holds a subtask of every
        vertex of the group."""
        return self._profile_of(self.slot_sharing_groups()[group], default)

    def shared_slot_profiles(self, group: str, default: ResourceSpec) -> list[ResourceSpec]:
        """The profile of each shared slot of the group, by index. Shared slot i holds
        subtask i of every vertex of the group that has one (seed 000), so it needs only
        those vertices' specs: Flink sums the subtasks that share each slot, and a
        narrower vertex does not make every slot of the group larger."""
        members = self.slot_sharing_groups()[group]
        width = max(v.parallelism or 1 for v in members)
        concurrency = SlotConcurrency(self) if any(v.resources for v in members) else None
        return [self._profile_of([v for v in members if (v.parallelism or 1) > i], default,
                                 concurrency)
                for i in range(width)]

    def shared_slot_profile_now(self, members: list[JobVertex], scheduled: list[JobVertex],
                                default: ResourceSpec) -> ResourceSpec:
        """What a shared slot holding ``members`` needs when ``scheduled`` of them start:
        members that ended before they start (an earlier stage) add nothing, as Flink's
        fine-grained resource management sizes each slot request. A stage after a
        3-core stage then asks for the 1-core slots it needs, where a cluster that
        had room for only two 3-core containers would never place a third (issue 81)."""
        if not any(v.resources for v in members):
            return self._profile_of(members, default)
        concurrency = SlotConcurrency(self)
        return self._profile_of(concurrency.still_needed(members, scheduled), default,
                                concurrency)

    def stage_slot_profiles(self, group: str, default: ResourceSpec) -> set[ResourceSpec]:
        """Every profile the group's shared slots are asked for as their stages start
        (``shared_slot_profile_now``): a per-job application names its container
        sizes before it starts."""
        members = self.slot_sharing_groups()[group]
        if not any(v.resources for v in members):
            return set()
        concurrency = SlotConcurrency(self)
        profiles = set()
        for i in range(max(v.parallelism or 1 for v in members)):
            held = [v for v in members if (v.parallelism or 1) > i]
            for region in {concurrency.region[v.id] for v in held}:
                starting = [v for v in held if concurrency.region[v.id] == region]
                profiles.add(self._profile_of(concurrency.still_needed(held, starting), default,
                                              concurrency))
        return profiles

    def _profile_of(self, members: list[JobVertex], default: ResourceSpec,
                    concurrency: SlotConcurrency | None = None) -> ResourceSpec:
        """What the members need at once: the specs of those that may run at the same
        time, summed (core/shared_slot_profile.py: a stage that starts only after
        another has finished adds nothing to it); vertices without a spec add nothing,
        and members with no spec at all get ``default``. ``concurrency``: the graph's
        regions, when the caller has them (they are the same for every slot)."""
        total = default
        if any(v.resources for v in members):
            total = (concurrency or SlotConcurrency(self)).profile(members) or default
        if self.spark_overhead_mb and any(v.uses_spark for v in members):
            total = total.with_memory(total.memory_mb + self.spark_overhead_mb)
        return total

    def check_outputs(self, application_ended: Callable[[str], bool] | None = None) -> None:
        """Refuse, before anything runs, an output that exists (unless the sink
        overwrites) or that this user cannot write. With ``application_ended`` (YARN's
        answer), the leases of jobs whose applications ended are released: the job
        then clears what they left instead of waiting for their leases to lapse."""
        for vertex in self.vertices.values():
            try:
                vertex.operator.value.check_submittable()
            except ContractError as err:
                problem, _, fix = str(err).partition(". Fix: ")
                raise InvalidPipelineError(vertex.name, problem, fix or "correct the source") \
                    from None
            if vertex.committer is not None:
                committer = vertex.committer.value
                try:
                    committer.check_submittable()
                except ValueError as err:       # the sink's DataPathError
                    raise path_error(vertex.name, err) from None
                if application_ended is not None:
                    try:
                        committer.release_ended(application_ended)
                    except OSError as err:      # such leases lapse in time all the same
                        log.warning("the leases on %s's output were not checked with YARN: "
                                    "%s", vertex.name, err)

    def validate(self, max_worker: ResourceSpec, default_slot: ResourceSpec) -> None:
        """Refuse what cannot run, naming the vertex and the fix."""
        if not self.vertices:
            raise InvalidPipelineError("<none>", "the pipeline has no operators",
                                       "add a source and a sink before executing")
        self.topological_order()
        for vertex in self.vertices.values():
            if vertex.parallelism is None or vertex.parallelism < 1:
                raise InvalidPipelineError(vertex.name, f"parallelism {vertex.parallelism} "
                                           "is not a positive number", "set parallelism >= 1")
            if len(self.inputs_of(vertex)) != vertex.num_inputs:
                raise InvalidPipelineError(
                    vertex.name, f"the operator takes {vertex.num_inputs} input(s) but "
                    f"{len(self.inputs_of(vertex))} are connected", "connect exactly as many inputs "
                    "as the operator reads")
        for edge in self.edges:
            if edge.ship is ShipStrategy.FORWARD and \
                    edge.source.parallelism != edge.target.parallelism:
                raise InvalidPipelineError(
                    edge.target.name, f"a FORWARD edge from '{edge.source.name}' (parallelism "
                    f"{edge.source.parallelism}) to this vertex (parallelism "
                    f"{edge.target.parallelism}) needs equal parallelism",
                    "give both operators the same parallelism, or use rebalance() / key_by() "
                    "to redistribute between them")
            if edge.ship is ShipStrategy.HASH and not edge.keys:
                raise InvalidPipelineError(edge.target.name, "a HASH edge without keys",
                                           "name the key columns in key_by(...)")
        self._validate_co_location()
        for group, members in self.slot_sharing_groups().items():
            self._validate_node_labels(group, members)
            profile = self.slot_profile(group, default_slot)
            if not profile.within(max_worker):
                names = ", ".join(f"'{v.name}'" for v in members)
                heaviest = max(members, key=lambda v: v.resources.memory_mb if v.resources else -1)
                raise InvalidPipelineError(
                    heaviest.name, f"slot sharing group '{group}' ({names}) needs {profile}, "
                    f"more than the largest container allowed ({max_worker})",
                    "lower the operators' ResourceSpec, move heavy operators into a slot "
                    "sharing group of their own, or raise resourcemanager.max-worker.cpu / "
                    "resourcemanager.max-worker.memory (on YARN, ask for a larger "
                    "yarn.scheduler.maximum-allocation-mb / -vcores)")

    @staticmethod
    def _validate_node_labels(group: str, members: list[JobVertex]) -> None:
        """A shared slot runs in one partition: its operators may name one node label."""
        first: dict[str, JobVertex] = {}
        for vertex in members:
            label = vertex.resources.node_label if vertex.resources else ""
            if label:
                first.setdefault(label, vertex)
        if len(first) > 1:
            (one, a), (other, b) = list(first.items())[:2]
            raise InvalidPipelineError(
                b.name, f"its ResourceSpec names node label '{other}', but '{a.name}', in the "
                f"same slot sharing group '{group}', names '{one}': a shared slot runs in one "
                "partition", "give the operators of each node label a slot sharing group of "
                "their own (.slot_sharing_group(...))")

    def _validate_co_location(self) -> None:
        by_group: dict[str, list[JobVertex]] = {}
        for vertex in self.vertices.values():
            if vertex.co_location_group:
                by_group.setdefault(vertex.co_location_group, []).append(vertex)
        for group, members in by_group.items():
            first = members[0]
            for vertex in members:
                if vertex.slot_sharing_group != first.slot_sharing_group:
                    raise InvalidPipelineError(
                        vertex.name, f"co-location group '{group}' needs slot sharing, but this "
                        f"vertex is in slot sharing group '{vertex.slot_sharing_group}' and "
                        f"'{first.name}' in '{first.slot_sharing_group}'",
                        "put every co-located operator in the same slot sharing group")
                if vertex.parallelism != first.parallelism:
                    raise InvalidPipelineError(
                        vertex.name, f"co-located vertices need equal parallelism: this vertex "
                        f"has {vertex.parallelism}, '{first.name}' has {first.parallelism}",
                        "give every operator of the co-location group the same parallelism")
