"""The pipeline API: build a JobGraph from sources, transformations and sinks.

    p = Pipeline("orders", parallelism=4)
    orders = p.read_parquet("orders/").filter(lambda b: pc.greater(b["amount"], 0))
    orders.key_by("customer").aggregate(["customer"], [("amount", "sum")]) \\
          .write_parquet("out/")
    p.execute()

An edge the user does not shape is FORWARD when both sides have the same parallelism
and REBALANCE otherwise (as Flink does); ``forward()`` insists on FORWARD, and then a
parallelism mismatch is an error.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import pyarrow as pa

from yarnflow.client.dataset_settings import Exchanges, OperatorSettings
from yarnflow.client.operator_args import function_name, key_list, operator
from yarnflow.client.outputs import OutputOperators
from yarnflow.client.planner.compiler import Planning, compile_plan
from yarnflow.client.planner.estimates import estimate_hint
from yarnflow.client.planner.joins import JoinStrategy
from yarnflow.client.planner.logical import JoinInput, LogicalEdge, LogicalJoin, LogicalPlan
from yarnflow.client.relational import RelationalOperators
from yarnflow.client.streaming import StreamingOperators
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import (InvalidPipelineError, JobGraph, JobVertex, PartitionType,
                                    ScheduleMode, ShipStrategy)
from yarnflow.core.operators import (CsvSource, FilterOperator, FlatMapOperator,
                                     HashJoinOperator, MapOperator, ParquetSource,
                                     SelectOperator, TableSource)
from yarnflow.core.operators.base import PlanError
from yarnflow.core.operators.spark import SparkOperator
from yarnflow.core.units import parse_parallelism
from yarnflow.core.user_code import UserCode


class Pipeline:
    """A job being built: its sources, and through them every operator.

    Example:
        ```python
        p = yf.Pipeline("orders", parallelism=4)
        p.read_parquet("orders/").filter(is_big).write_parquet("big/")
        p.execute()
        ```

    Args:
        name: the job's name, in the summary, the web UI and YARN's application list.
        parallelism: subtasks of each operator that sets none
            (default: ``parallelism.default``, 1).
        schedule_mode: ``"EAGER"`` deploys every subtask at once; ``"LAZY_FROM_SOURCES"``
            deploys a stage once its inputs are consumable (batch jobs, speculation).
        exchange: how redistributed data moves, ``"pipelined"`` or ``"blocking"``;
            unset, blocking with ``execution.batch.adaptive.enabled`` (whose decisions
            need written inputs), else pipelined.
    """

    def __init__(self, name: str = "yarnflow job", parallelism: int | None = None,
                 schedule_mode: ScheduleMode | str = ScheduleMode.EAGER,
                 exchange: str | None = None) -> None:
        self.name = name
        self.parallelism = None if parallelism is None else parse_parallelism(parallelism)
        self.schedule_mode = ScheduleMode[schedule_mode] if isinstance(schedule_mode, str) \
            else schedule_mode
        if exchange not in (None, "pipelined", "blocking"):
            raise ValueError("exchange must be 'pipelined' or 'blocking'")
        self.exchange: PartitionType | None = None if exchange is None else \
            PartitionType.BLOCKING if exchange == "blocking" else PartitionType.PIPELINED
        self._vertices: list[JobVertex] = []
        self._edges: list[LogicalEdge] = []
        self._joins: list[LogicalJoin] = []
        self._names: dict[str, int] = {}
        # a step the planner added for an operator (a local aggregate): the operator's
        # name, which the user knows, for its errors
        self._step_of: dict[str, str] = {}

    # --- sources ---------------------------------------------------------------------
    def read_parquet(self, path: str | list[str], columns: list[str] | None = None,
                     name: str | None = None, partition_filter: Any = None, *,
                     watch: str | float | None = None, uid: str = "") -> "DataSet":
        """Parquet files: a file, a directory's files (in Hive-style partition
        directories too, ``day=2024-01-01/``, whose values become columns), a glob,
        or a list of these. ``partition_filter`` (a pyarrow expression over partition
        columns, ``pc.field("day") >= "2024-01-01"``, or a function of a dict of them)
        reads only the partitions it selects.

        With ``watch`` (``"10 s"``), a streaming source: the directory is listed that
        often and each new file read once (Flink's ``monitorContinuously``); the files
        read are checkpointed state."""
        if watch is not None:
            return self._watched(path, "parquet", watch, None, name or "parquet-source", uid,
                                 columns)
        return self._source(ParquetSource(path, columns, partition_filter), name or "parquet-source")

    def read_json(self, path: str, schema: pa.Schema, *, watch: str | float,
                  name: str | None = None, uid: str = "") -> "DataSet":
        """Newline-delimited JSON files of ``schema`` appearing in a directory, read as
        a streaming source (``watch``: how often the directory is listed)."""
        return self._watched(path, "json", watch, schema, name or "json-source", uid, None)

    def _watched(self, path: Any, file_format: str, watch: str | float,
                 schema: pa.Schema | None, name: str, uid: str,
                 columns: list[str] | None) -> "DataSet":
        from yarnflow.core.streaming.file_source import WatchedDirectorySource
        from yarnflow.core.units import parse_duration
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidPipelineError(name, "a watched source is one directory",
                                       "name the directory new files appear in")
        try:
            source = WatchedDirectorySource(str(path), file_format, parse_duration(watch),
                                            schema, uid)
        except (PlanError, ValueError) as err:
            problem, fix = (err.problem, err.fix) if isinstance(err, PlanError) else \
                (str(err), "give watch as a duration, e.g. '10 s'")
            raise InvalidPipelineError(name, problem, fix) from None
        out = self._source(source, name)
        return out.select(*columns) if columns else out

    def read_csv(self, path: str | list[str], name: str | None = None, *,
                 watch: str | float | None = None, schema: pa.Schema | None = None,
                 uid: str = "", **read_options: Any) -> "DataSet":
        """CSV files: a file, a directory's files, a glob, or a list of these, cut into
        equal byte ranges at line ends. Column names and types are inferred once, from
        the first file's first megabyte, and hold for every range.

        Args:
            path: where the files are; without a scheme, on the target's default file
                system.
            name: the source's vertex name (default ``csv-source``).
            **read_options: pyarrow's ``read_options=pyarrow.csv.ReadOptions(...)``,
                ``parse_options=pyarrow.csv.ParseOptions(...)`` and
                ``convert_options=pyarrow.csv.ConvertOptions(...)``. With
                ``ParseOptions(newlines_in_values=True)`` a file is read whole by one
                subtask (a line's end cannot be found from an arbitrary byte).

        Example:
            ```python
            p.read_csv("events/", parse_options=pacsv.ParseOptions(delimiter=";"))
            ```
        """
        if watch is not None:     # a streaming source; ``schema`` types every file alike
            return self._watched(path, "csv", watch, schema, name or "csv-source", uid, None)
        return self._source(CsvSource(path, **read_options), name or "csv-source")

    def from_arrow(self, table: pa.Table, name: str | None = None) -> "DataSet":
        """An in-memory ``pyarrow.Table`` as a source. It travels with the job to the
        JobMaster, which hands each subtask its own rows: for small tables (lookups,
        tests); data of hundreds of MB belongs on the cluster's file system."""
        return self._source(TableSource(table), name or "arrow-source")

    def read_kafka(self, topics: str | Sequence[str], bootstrap_servers: str, *,
                   schema: pa.Schema | None = None, value_format: str = "json",
                   starting_offsets: Any = "earliest", stopping_offsets: str | None = None,
                   properties: dict[str, Any] | None = None, group_id: str = "",
                   deserialization_errors: str | None = None, name: str | None = None,
                   uid: str = "", metadata: Sequence[str] = ()) -> "DataSet":
        """Records of Kafka ``topics`` (a streaming source: the job runs until it is
        stopped or cancelled, unless ``stopping_offsets='latest'`` ends it at the log's
        end as it was at the start).

        Args:
            topics: one topic or several.
            bootstrap_servers: ``host:port,...`` of the brokers.
            schema: the values' columns (``value_format='json'``: one JSON object per
                record); ``'raw'`` gives one binary column ``value``.
            starting_offsets: ``'earliest'``, ``'latest'``, ``'committed'`` (the
                consumer group's) or ``{partition: offset}``; a restore from a
                checkpoint starts where it left off, whatever this says.
            properties: librdkafka's consumer properties, e.g. ``security.protocol``,
                ``sasl.mechanism``, ``sasl.username``, ``ssl.ca.location``.
            group_id: the consumer group its offsets are committed to when a checkpoint
                completes (monitoring only); default ``yarnflow-<job id>``.
            deserialization_errors: ``'fail'`` (the job fails naming the partition and
                offset) or ``'skip'`` (counted); default ``source.deserialization.errors``.
            metadata: record fields added as columns: ``'timestamp'`` (``kafka_timestamp``,
                ms), ``'partition'``, ``'offset'``.
        """
        from yarnflow.conf import options
        from yarnflow.core.streaming.kafka_source import KafkaSource
        errors = deserialization_errors or Configuration.load().get(
            options.SOURCE_DESERIALIZATION_ERRORS)
        try:
            source = KafkaSource(topics, bootstrap_servers, schema, value_format,
                                 starting_offsets, stopping_offsets, properties, group_id,
                                 Configuration.load().get(options.PARTITION_DISCOVERY_INTERVAL),
                                 errors, uid, metadata)
        except PlanError as err:
            raise InvalidPipelineError(name or "kafka-source", err.problem, err.fix) from None
        return self._source(source, name or "kafka-source")

    def _source(self, operator: Any, name: str) -> "DataSet":
        return DataSet(self, self._add_vertex(name, operator, 0))

    def _add_vertex(self, name: str, operator: Any, num_inputs: int) -> JobVertex:
        count = self._names.get(name, 0)
        self._names[name] = count + 1
        unique = name if count == 0 else f"{name}-{count + 1}"
        vertex = JobVertex(name=unique, operator=UserCode.of(operator), num_inputs=num_inputs)
        self._vertices.append(vertex)
        return vertex

    def _connect(self, upstream: "DataSet", target: JobVertex, target_input: int = 0,
                 ship: ShipStrategy | None = None, keys: Sequence[str] = ()) -> None:
        self._edges.append(LogicalEdge(
            upstream.vertex, target, ship if ship is not None else upstream._ship,
            tuple(keys) or upstream._keys, upstream._partition_type, target_input))

    # --- the JobGraph ----------------------------------------------------------------
    def logical_plan(self) -> LogicalPlan:
        """What the pipeline recorded, nothing decided (``client/planner/logical.py``)."""
        return LogicalPlan(self.name, self.parallelism, self.schedule_mode, self.exchange,
                           tuple(self._vertices), tuple(self._edges), tuple(self._joins),
                           dict(self._step_of))

    def job_graph(self, config: Configuration | None = None,
                  after_pass: Callable[[str, Planning], None] | None = None) -> JobGraph:
        """The JobGraph, planned and validated against ``config`` by the planner's passes
        (``client/planner/compiler.py``; ``after_pass(name, planning)`` sees each).

        Planning works on copies of the pipeline's vertices and new operators: the
        user's pipeline is never changed, so it can be planned again with another
        configuration (another default parallelism, another file system)."""
        return compile_plan(self.logical_plan(), config or Configuration.load(), after_pass)

    def _drop(self, vertex: JobVertex) -> None:
        """Take a vertex that has no consumer out again (a collect sink once it ran)."""
        self._vertices.remove(vertex)
        self._edges = [e for e in self._edges if e.target.id != vertex.id]

    def execute(self, target: str | None = None, config: Configuration | None = None) -> Any:
        """Run the pipeline as one job and return its ``yf.JobHandle``.

        Under ``yarnflow run`` it runs on the CLI's target; run by plain ``python``, on
        ``target`` or ``execution.target`` (``local`` by default). On ``local`` and with
        ``execution.attached`` the call returns once the job ended, and raises
        ``yf.JobFailedError`` unless it FINISHED; a detached YARN run returns once YARN
        accepted the application (``status()``, ``wait(timeout)`` and ``cancel()``
        follow it).

        Args:
            target: ``"local"``, ``"yarn-per-job"`` or ``"yarn-session"``.
            config: a ``yarnflow.conf.Configuration``; default: the configuration file
                and the CLI's ``-D`` options.
        """
        from yarnflow.client.context import execute_pipeline
        return execute_pipeline(self, target, config)


class DataSet(OperatorSettings, Exchanges, RelationalOperators, OutputOperators,
              StreamingOperators):
    """The output of one operator; transformations return new DataSets."""

    def __init__(self, pipeline: Pipeline, vertex: JobVertex,
                 ship: ShipStrategy | None = None, keys: tuple[str, ...] = (),
                 partition_type: PartitionType | None = None) -> None:
        self.pipeline = pipeline
        self.vertex = vertex
        self._ship = ship
        self._keys = keys
        self._partition_type = partition_type
        self._single = False      # one subtask after a limit or top: what follows too

    # --- transformations -------------------------------------------------------------
    def _as_join_input(self) -> JoinInput:
        return JoinInput(self.vertex, self._ship, self._keys, self._partition_type)

    def _derived(self, vertex: JobVertex, ship: ShipStrategy | None = None,
                 keys: tuple[str, ...] = (),
                 partition_type: PartitionType | None = None) -> "DataSet":
        return DataSet(self.pipeline, vertex, ship, keys, partition_type)

    def _unary(self, operator: Any, name: str, **edge: Any) -> "DataSet":
        vertex = self.pipeline._add_vertex(name, operator, 1)
        self.pipeline._connect(self, vertex, **edge)
        out = DataSet(self.pipeline, vertex)
        if self._single:     # after a limit or top: one subtask keeps their order
            vertex.parallelism, out._single = 1, True
        return out

    def map(self, fn: Callable[[pa.RecordBatch], Any], name: str | None = None, *,
            selectivity: float | None = None, size: int | str | None = None,
            output_schema: Any = None) -> "DataSet":
        """Apply ``fn`` to every batch: ``fn(batch)`` returns a ``pyarrow.RecordBatch``
        or ``pyarrow.Table`` (``None`` for nothing). Returning anything else fails the
        job at once, without restarts, naming the operator.

        Args:
            fn: the function; it runs on the executors, so it must pickle (cloudpickle
                takes lambdas and closures).
            name: the vertex name (default: the function's name).
            selectivity: output rows per input row, for the planner's estimate.
            size: the output's bytes (``"200 mb"``), for the planner's estimate;
                without either, the estimate keeps the input's.
            output_schema: a ``pyarrow.schema`` of the columns ``fn`` returns. The
                client then checks the operators after it against them, and every
                batch ``fn`` returns must have them; undeclared, they are unknown and
                not checked.

        Example:
            ```python
            with_tax = orders.map(lambda b: b.append_column(
                "tax", pc.multiply(b["amount"], 0.2)))
            ```
        """
        name = name or function_name(fn, "map")
        return self._unary(operator(name, MapOperator, fn, name, estimate_hint(name, selectivity, size),
                                     output_schema), name)

    def filter(self, fn: Callable[[pa.RecordBatch], Any], name: str | None = None, *,
               selectivity: float | None = None, size: int | str | None = None) -> "DataSet":
        """``selectivity``: the share of rows kept, for the planner (see ``map``)."""
        name = name or function_name(fn, "filter")
        return self._unary(FilterOperator(fn, name, estimate_hint(name, selectivity, size)), name)

    def select(self, *columns: str, name: str = "select") -> "DataSet":
        """The named columns, in that order; a column the input lacks is refused at
        submission where the input's columns are known."""
        if not columns:
            raise InvalidPipelineError(name, "select names no column",
                                       "name the columns to keep: select('a', 'b')")
        return self._unary(SelectOperator(columns), name)

    def flat_map(self, fn: Callable[[pa.RecordBatch], Any], name: str | None = None, *,
                 selectivity: float | None = None, size: int | str | None = None,
                 output_schema: Any = None) -> "DataSet":
        """``selectivity``: output rows per input row, for the planner; ``output_schema``
        as for ``map``."""
        name = name or function_name(fn, "flat_map")
        return self._unary(operator(name, FlatMapOperator, fn, name,
                                     estimate_hint(name, selectivity, size), output_schema), name)

    def spark_sql(self, sql: str, name: str = "spark-sql", *,
                  output_schema: Any = None) -> "DataSet":
        """Run Spark SQL over this data set, registered as the view ``input``; each
        subtask runs the query on its share of the rows in its TaskExecutor's
        SparkSession (``SELECT ... FROM input``). ``output_schema`` as for ``map``."""
        return self._spark(operator(name, SparkOperator, name, sql=sql,
                                     output_schema=output_schema), name)

    def spark(self, fn: Callable[[Any, Any], Any], name: str | None = None, *,
              output_schema: Any = None) -> "DataSet":
        """``fn(spark, df) -> df``: any DataFrame code over this subtask's rows."""
        name = name or function_name(fn, "spark")
        return self._spark(operator(name, SparkOperator, name, fn=fn,
                                     output_schema=output_schema), name)

    def _spark(self, operator: Any, name: str) -> "DataSet":
        out = self._unary(operator, name)
        out.vertex.uses_spark = True
        return out

    def join(self, other: "DataSet", on: str | Sequence[str] | None = None,
             left_on: str | Sequence[str] | None = None,
             right_on: str | Sequence[str] | None = None, how: str = "inner",
             strategy: str = "auto", name: str = "join") -> "DataSet":
        """Join with ``other`` on equal keys.

        Args:
            other: the right side, a DataSet of the same Pipeline.
            on: the key column(s), named alike on both sides.
            left_on: this side's key column(s), when the names differ.
            right_on: ``other``'s key column(s), as many as ``left_on``, of types that
                agree.
            how: one of Spark's join types: ``"inner"``; ``"left"`` (every left row,
                right columns null where none matches; also ``"left_outer"``,
                ``"left outer"``); ``"right"``; ``"full"`` (``"outer"``);
                ``"left_semi"`` (``"semi"``: left rows that have a match, left columns
                only); ``"left_anti"`` (``"anti"``: left rows that have none).
            strategy: ``"auto"`` lets the planner decide from both sides' size
                estimates: it broadcasts a side estimated within
                ``planner.broadcast-threshold`` and keeps the other where it is, else
                it hash-partitions both on the keys and builds the smaller side.
                ``"broadcast"`` (sends ``other`` whole to every subtask) and ``"hash"``
                force the choice. A side whose every row must come out is never the
                broadcast or build side.
            name: the vertex name.

        Returns:
            The joined rows: this side's columns, then ``other``'s without its keys
            (the keys are coalesced: a ``full`` join's key is whichever side has one);
            a column of ``other`` this side also has gets the suffix ``_right``.

        Example:
            ```python
            orders.join(customers, left_on="cust", right_on="id", how="left")
            ```
        """
        left_keys = key_list(left_on if left_on is not None else on)
        right_keys = key_list(right_on if right_on is not None else on)
        if not left_keys or len(left_keys) != len(right_keys):
            raise ValueError("join needs on=..., or left_on and right_on of equal length")
        try:
            operator = HashJoinOperator(left_keys, right_keys, how, build_input=1)
        except ValueError as err:
            raise InvalidPipelineError(name, str(err), "use one of Spark's join types "
                                       "(how='left', 'left_anti', ...)") from None
        vertex = self.pipeline._add_vertex(name, operator, 2)
        self.pipeline._joins.append(LogicalJoin(vertex, self._as_join_input(), other._as_join_input(),
                                                left_keys, right_keys, JoinStrategy.parse(strategy)))
        return DataSet(self.pipeline, vertex)
