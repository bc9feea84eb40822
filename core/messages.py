"""What components say to each other through their gateways, as plain dataclasses.
Components take and return these; protobuf exists only at the rpc edge
(``yarnflow.rpc.codec``)."""
from __future__ import annotations

from dataclasses import dataclass, field

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobID, JobMasterId, ResourceID
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import ExecutionState


@dataclass(frozen=True)
class TaskExecutorLocation:
    """Where a TaskExecutor can be reached: control calls and the data plane."""
    resource_id: ResourceID
    host: str
    rpc_address: str = ""
    data_address: str = ""


@dataclass(frozen=True)
class SlotStatus:
    """One slot as its executor sees it; ``allocation_id`` is empty when free."""
    slot_index: int
    profile: ResourceSpec
    allocation_id: AllocationID = AllocationID("")
    job_id: JobID = JobID("")


@dataclass(frozen=True)
class SlotReport:
    """An executor's slot table. ``version`` grows with every change, so a report
    overtaken by a later allocation is recognised and ignored."""
    slots: tuple[SlotStatus, ...] = ()
    version: int = 0


@dataclass(frozen=True)
class TaskExecutorRegistration:
    location: TaskExecutorLocation
    slot_report: SlotReport
    total_resources: ResourceSpec | None = None
    worker_spec: str = ""      # the worker spec the driver started it for


@dataclass(frozen=True)
class SlotAllocation:
    """The ResourceManager's order to an executor: give this slot to that job."""
    slot_index: int
    job_id: JobID
    allocation_id: AllocationID
    profile: ResourceSpec
    job_master_id: JobMasterId
    job_master_address: str


@dataclass(frozen=True)
class SlotRequest:
    """A JobMaster's request for one slot of ``profile``, idempotent per AllocationID."""
    allocation_id: AllocationID
    job_id: JobID
    job_master_id: JobMasterId
    job_master_address: str
    profile: ResourceSpec
    preferred_hosts: tuple[str, ...] = ()   # where a worker started for it should run
    # only a slot of exactly ``profile`` serves it (an adaptively sized stage's: a larger
    # idle slot would hold memory the stage was sized not to need)
    exact: bool = False
    # slots of ``profile`` the job holds at once (0: not said): a worker started without
    # a planned spec gets no more slots of it than that (issue 57, item 4)
    wanted: int = 0


@dataclass(frozen=True)
class WorkerInfo:
    resource_id: ResourceID
    worker_spec: str
    slot_profile: ResourceSpec | None
    num_slots: int
    free_slots: int
    rpc_address: str = ""
    data_address: str = ""


@dataclass(frozen=True)
class ClusterOverview:
    workers: tuple[WorkerInfo, ...] = ()
    pending_workers: int = 0
    pending_slot_requests: int = 0
    workers_started_per_spec: dict[str, int] = field(default_factory=dict)
    delegation_tokens: "TokenStatus | None" = None


@dataclass(frozen=True)
class TokenStatus:
    """The application's HDFS delegation tokens, as its ResourceManager renews or
    watches them (``appmaster/resourcemanager/delegation_tokens.py``)."""
    state: str                 # watching, obtaining, valid, retrying, stopped
    expires_at: float          # epoch seconds; 0 when no token is known
    renewals: int
    last_renewal_ms: float     # how long the last renewal took, asking to handing out
    warning: str               # one line, or empty


@dataclass(frozen=True)
class SlotOffer:
    """An executor offers a JobMaster the slot the ResourceManager gave its job."""
    allocation_id: AllocationID
    slot_index: int
    profile: ResourceSpec
    worker_spec: str = ""     # the executor's, so job details can say where a task ran


@dataclass(frozen=True)
class OperatorMetrics:
    """What one operator of a chained task read and wrote (Flink's per-operator
    ``numRecordsIn``/``numRecordsOut`` under a chained vertex). The head's input is
    the task's; every other operator's is what the one before it emitted."""
    name: str
    records_in: int = 0
    records_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    # it has finished in this subtask (its input ended and it flushed what it held): an
    # aggregate at a chain's end still works after the operators before it finished
    finished: bool = False


@dataclass
class OperatorCounter:
    """The running count behind one operator's OperatorMetrics, kept by its task's
    thread."""
    name: str
    records_in: int = 0
    records_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    finished: bool = False

    def snapshot(self) -> OperatorMetrics:
        return OperatorMetrics(self.name, self.records_in, self.records_out, self.bytes_in,
                               self.bytes_out, self.finished)


@dataclass
class TaskMetrics:
    """What one attempt read and wrote; its task thread counts, reports carry a copy.
    ``records_in_per_input`` splits ``records_in`` by input index: a join's probe side
    and its broadcast (or build) side apart, whose skews mean different things."""
    records_in: int = 0
    records_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    duration_s: float = 0.0
    records_in_per_input: tuple[int, ...] = ()
    # input progress, in units a task knows without reading ahead: a source's splits
    # (done, and handed to it so far), another task's input channels (ended, and opened)
    inputs_done: int = 0
    inputs_total: int = 0
    # a finished producer's Arrow bytes per subpartition, per produced result (in the
    # order of its TaskInformation's results): what adaptive execution decides from
    produced_bytes: tuple[tuple[int, ...], ...] = ()
    # a chained task's operators, head first (empty: one operator, the task's figures)
    operators: tuple[OperatorMetrics, ...] = ()
    # a sort's subtask: the first and last sort key of its range, as text (empty: not
    # a sort, or no rows): the range boundaries the job's details show with its bytes
    key_range: tuple[str, ...] = ()
    # what its operators spilled to local disk past their share of the slot's memory
    spilled_bytes: int = 0
    spill_files: int = 0
    # a stream task's event time (ms; None: no watermark yet), its source's records not
    # read yet (Kafka's lag; None: unknown), and its operators' counters (late records
    # dropped, records skipped, files committed)
    watermark: int | None = None
    lag: int | None = None
    counters: dict[str, int] = field(default_factory=dict)


def records_from(metrics: TaskMetrics, input_index: int) -> int:
    per_input = metrics.records_in_per_input
    return per_input[input_index] if input_index < len(per_input) else 0


def input_skew(metrics: list[TaskMetrics], input_index: int | None = None) -> float | None:
    """Most records one subtask read ÷ the mean: 1.0 is perfectly balanced; a hash join
    on a skewed key shows nearly the parallelism here. Of one input when
    ``input_index`` is given (a broadcast side is alike everywhere by construction).
    The CLI's summary and the web UI both show it."""
    counts = [m.records_in for m in metrics] if input_index is None else \
        [records_from(m, input_index) for m in metrics]
    mean = sum(counts) / len(counts) if counts else 0
    return max(counts) / mean if mean else None


@dataclass(frozen=True)
class TaskExecutionState:
    """An attempt's state change, reported by its executor to the JobMaster.
    ``upstream_failure`` marks a failure caused by an input's producer, so the JobMaster
    prefers any other cause it hears of; ``non_recoverable`` one that no restart can heal
    (``yarnflow.core.failures``), so the JobMaster fails the job at once."""
    attempt_id: ExecutionAttemptID
    state: ExecutionState
    error: str = ""
    error_detail: str = ""
    upstream_failure: bool = False
    metrics: TaskMetrics | None = None
    non_recoverable: bool = False
    # a collect sink's rows, an Arrow IPC stream, with its FINISHED report (b"": none)
    collected: bytes = b""


@dataclass(frozen=True)
class AskAgain:
    """No input split for this subtask yet: splits are left, but for subtasks that read
    them locally. Ask again after ``seconds``."""
    seconds: float


# The answer to a split request: a split (cloudpickled), AskAgain, or None at the end.
SplitAnswer = bytes | AskAgain | None
