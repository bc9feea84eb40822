"""Where a DataSet's rows go: Parquet, CSV or JSON files, partitioned or not, or back
to the client (``collect``, issue 56).

Each write is a sink whose output appears whole when the job commits
(``yarnflow.core.operators.sinks``). Kept apart from ``pipeline.py`` so that each
module has one job.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import pyarrow as pa

from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.streaming.file_sink import TimeBuckets
from yarnflow.core.operators.sinks import FileSink
from yarnflow.core.user_code import UserCode

if TYPE_CHECKING:
    import pandas

    from yarnflow.client.pipeline import DataSet


class OutputOperators:
    """Mixed into ``DataSet``."""

    def _unary(self, operator: Any, name: str, **edge: Any) -> "DataSet":
        raise NotImplementedError      # DataSet's

    def write_parquet(self, path: str, mode: str = "errorifexists", name: str = "parquet-sink",
                      partition_by: Sequence[str] = ()) -> "DataSet":
        """Write Parquet files under ``path`` (a directory on any file system; without
        a scheme, on the default one), one per subtask, ``part-00000.parquet`` on. They
        appear there only when the job has finished, all at once; a failed or
        cancelled job leaves ``path`` as it was. ``mode`` (Spark's): an existing
        ``path`` is refused at submission (``"errorifexists"``), replaced in one step
        when the job commits (``"overwrite"``), or added to (``"append"``: the job's
        files join it, named with the job's id, one rename each). ``partition_by``:
        columns whose values name Hive-style directories (``day=2024-01-01/``) that
        hold the rest of the columns, as Spark's ``partitionBy`` writes them."""
        return self._write(path, mode, name, "parquet", partition_by)

    def write_csv(self, path: str, mode: str = "errorifexists", name: str = "csv-sink",
                  partition_by: Sequence[str] = ()) -> "DataSet":
        """Write CSV files (a header line, then a line per row; a null is empty) under
        ``path``, as ``write_parquet`` writes Parquet."""
        return self._write(path, mode, name, "csv", partition_by)

    def write_json(self, path: str, mode: str = "errorifexists", name: str = "json-sink",
                   partition_by: Sequence[str] = ()) -> "DataSet":
        """Write newline-delimited JSON (one object per row and line, Spark's ``json``)
        under ``path``, as ``write_parquet`` writes Parquet."""
        return self._write(path, mode, name, "json", partition_by)

    def _write(self, path: str, mode: str, name: str, file_format: str,
               partition_by: Sequence[str]) -> "DataSet":
        try:
            given = [partition_by] if isinstance(partition_by, str) else list(partition_by)
            buckets = [c for c in given if isinstance(c, TimeBuckets)]
            columns = [c for c in given if not isinstance(c, TimeBuckets)]
            sink = FileSink(str(path), mode, file_format, columns)
            if buckets:       # dt=.../hour=... directories: for an unbounded input
                sink.time_buckets = buckets[0]
        except ValueError as err:
            raise InvalidPipelineError(name, str(err), "use mode='errorifexists', "
                                       "'overwrite' or 'append'") from None
        out = self._unary(sink, name)
        out.vertex.committer = UserCode.of(sink.committer)
        return out

    def write_kafka(self, topic: str, bootstrap_servers: str, *, value_format: str = "json",
                    key: str | None = None, properties: dict[str, Any] | None = None,
                    name: str = "kafka-sink", uid: str = "") -> "DataSet":
        """Write each row to Kafka ``topic`` as one record, at least once: its value
        the row as a JSON object (``value_format='json'``) or the bytes of its
        ``value`` column (``'raw'``), its key the ``key`` column's text, if named. In a
        streaming job a checkpoint completes only once the broker acknowledged every
        record before it; after a failure the records since the latest checkpoint are
        written again (exactly once, through transactions, comes later). ``properties``
        go to the producer (librdkafka's names: ``security.protocol``, ``sasl.*``,
        ``compression.type``...). The brokers and the topic are checked at submission."""
        from yarnflow.core.operators.base import PlanError
        from yarnflow.core.streaming.kafka_sink import KafkaSink
        try:
            sink = KafkaSink(topic, bootstrap_servers, value_format, key, properties, uid=uid)
        except PlanError as err:
            raise InvalidPipelineError(name, err.problem, err.fix) from None
        return self._unary(sink, name)

    # --- back to the client ----------------------------------------------------------
    def to_arrow(self, target: str | None = None, config: Configuration | None = None,
                 name: str = "collect") -> pa.Table:
        """Run the pipeline (as ``execute(target, config)`` does) and return this
        DataSet's rows as a pyarrow Table, in their order (a sorted DataSet's, sorted).
        They come back through the JobMaster, so this is for small results: past
        ``pipeline.collect.max-result-size`` (64 mb) the job fails saying so; write
        larger ones with ``write_parquet``. The pipeline's other sinks run in the same
        job. On YARN the call waits for the job's end even when ``execution.attached``
        is off."""
        from yarnflow.client.collect import collect_table
        return collect_table(self, name, target, config)  # type: ignore[arg-type]  # DataSet's

    def collect(self, target: str | None = None, config: Configuration | None = None,
                name: str = "collect") -> list[dict[str, Any]]:
        """The rows as dicts (Spark's ``collect``), as ``to_arrow`` brings them."""
        rows: list[dict[str, Any]] = self.to_arrow(target, config, name).to_pylist()
        return rows

    def to_pandas(self, target: str | None = None, config: Configuration | None = None,
                  name: str = "collect") -> "pandas.DataFrame":
        """The rows as a pandas DataFrame (Spark's ``toPandas``), as ``to_arrow``
        brings them."""
        return self.to_arrow(target, config, name).to_pandas()
