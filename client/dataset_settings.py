"""What a DataSet says about its own operator (parallelism, resources, slot sharing,
chaining, name) and about how its records reach the next one (the ship strategy and
whether the exchange is BLOCKING). Mixed into ``DataSet``, kept apart from
``pipeline.py`` so that each module has one job."""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

from yarnflow.core.jobgraph import ChainingStrategy, JobVertex, PartitionType, ShipStrategy
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.units import parse_parallelism

if TYPE_CHECKING:
    from yarnflow.client.pipeline import DataSet, Pipeline


class OperatorSettings:
    """The settings of the DataSet's operator; each returns the DataSet, to chain calls."""
    vertex: JobVertex

    def set_parallelism(self, parallelism: int) -> "DataSet":
        """This operator's subtasks (default: the pipeline's parallelism)."""
        self.vertex.parallelism = parse_parallelism(parallelism)
        return cast("DataSet", self)

    def resources(self, spec: ResourceSpec) -> "DataSet":
        """What one subtask of this operator needs (``yf.ResourceSpec(cpu=2,
        memory="3g")``); a shared slot's profile is the sum of its subtasks' specs, and
        containers are sized from it."""
        self.vertex.resources = spec
        return cast("DataSet", self)

    def slot_sharing_group(self, name: str) -> "DataSet":
        """Subtasks of operators in one slot sharing group share slots (Flink's rule);
        every operator is in ``"default"`` unless it names another."""
        self.vertex.slot_sharing_group = name
        return cast("DataSet", self)

    def co_location_group(self, name: str) -> "DataSet":
        """The *i*-th subtasks of the operators in one co-location group run in the
        same slot (they must share a slot sharing group and parallelism)."""
        self.vertex.co_location_group = name
        return cast("DataSet", self)

    def disable_chaining(self) -> "DataSet":
        """This operator runs in a task of its own: chained neither to its producer nor
        to its consumer (Flink's ``disableChaining``)."""
        self.vertex.chaining = ChainingStrategy.NEVER
        return cast("DataSet", self)

    def start_new_chain(self) -> "DataSet":
        """This operator starts a chain: not chained to its producer, its consumer may
        be chained to it (Flink's ``startNewChain``)."""
        if self.vertex.chaining is not ChainingStrategy.NEVER:
            self.vertex.chaining = ChainingStrategy.HEAD
        return cast("DataSet", self)

    def name(self, name: str) -> "DataSet":
        """This operator's vertex name, in the summary, the web UI and its errors."""
        self.vertex.name = name
        return cast("DataSet", self)


class DataSetState:
    """What the DataSet's mixins use of it, declared once."""
    pipeline: "Pipeline"
    vertex: JobVertex
    _ship: ShipStrategy | None
    _keys: tuple[str, ...]
    _partition_type: PartitionType | None
    _single: bool

    def _derived(self, vertex: JobVertex, ship: ShipStrategy | None = None,
                 keys: tuple[str, ...] = (),
                 partition_type: PartitionType | None = None) -> "DataSet":
        raise NotImplementedError      # DataSet's


class Exchanges(DataSetState):
    """How the DataSet's records reach the next operator; each returns a DataSet of the
    same operator, shaped."""

    def _shaped(self, ship: ShipStrategy, keys: tuple[str, ...] = ()) -> "DataSet":
        return self._derived(self.vertex, ship, keys, self._partition_type)

    def key_by(self, *keys: str) -> "DataSet":
        """Hash-partition on ``keys`` into the next operator: rows with equal keys
        reach the same subtask."""
        if not keys:
            raise ValueError("key_by needs at least one key column")
        return self._shaped(ShipStrategy.HASH, tuple(keys))

    def broadcast(self) -> "DataSet":
        """Send every row to every subtask of the next operator."""
        return self._shaped(ShipStrategy.BROADCAST)

    def rebalance(self) -> "DataSet":
        """Deal rows evenly to every subtask of the next operator (rows, not whole
        batches)."""
        return self._shaped(ShipStrategy.REBALANCE)

    def forward(self) -> "DataSet":
        """Subtask *i* sends to subtask *i* of the next operator (equal parallelism).
        Without a call, an edge is FORWARD where both ends have the same parallelism,
        else REBALANCE."""
        return self._shaped(ShipStrategy.FORWARD)

    def blocking(self) -> "DataSet":
        """Materialize the next exchange on disk (BLOCKING) instead of streaming it."""
        out = self._derived(self.vertex, self._ship, self._keys, PartitionType.BLOCKING)
        out._single = self._single
        return out
