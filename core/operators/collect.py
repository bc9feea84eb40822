"""A collect sink: a subtask's rows go back to the client (``DataSet.collect()``,
``to_arrow()``, ``to_pandas()``), written as one Arrow IPC stream that the task sends
with its FINISHED report to the JobMaster (``appmaster/jobmaster/outputs.py``), which
hands the job's result to whoever submitted it.

A subtask refuses to hold more than the whole result may take
(``pipeline.collect.max-result-size``): past it, it fails the job at once (no restart
would make the rows fewer) with the fix in the one line, instead of growing in its
executor's and the JobMaster's memory.
"""
from __future__ import annotations

import pyarrow as pa

from yarnflow.core.estimates import format_bytes
from yarnflow.core.failures import NonRecoverableError
from yarnflow.core.operators.base import BatchProcessor, OneInputOperator
from yarnflow.core.operators.context import OperatorContext


class ResultTooLarge(NonRecoverableError):
    """The rows to collect exceed ``pipeline.collect.max-result-size``."""


def too_large(what: str, size: int, limit: int, where: str) -> str:
    """The one line of a result over the limit, with its fix (JobMaster's too)."""
    return (f"the result of {what} is over pipeline.collect.max-result-size "
            f"({format_bytes(limit)}): {format_bytes(size)} {where}. Fix: write it with "
            "write_parquet and read it from there, or raise "
            "pipeline.collect.max-result-size (at most 192 mb)")


class CollectSink(OneInputOperator):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.columns: pa.Schema | None = None    # its input's, where the plan knows them

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        return inputs[0]

    def planned(self, inputs: list[pa.Schema | None]) -> "CollectSink":
        """Its input's columns kept (on the plan's copy) so that a subtask without rows
        still tells the client the result's columns."""
        planned = CollectSink(self.limit)
        planned.columns = inputs[0]
        return planned

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return _Collecting(ctx, self.limit, self.columns)


class _Collecting(BatchProcessor):
    def __init__(self, ctx: OperatorContext, limit: int, columns: pa.Schema | None) -> None:
        self._ctx = ctx
        self._limit = limit
        self._columns = columns
        self._sink = pa.BufferOutputStream()
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None

    def process(self, batch: pa.RecordBatch) -> None:
        if self._writer is None:
            self._writer = pa.ipc.new_stream(self._sink, batch.schema)
        self._writer.write_batch(batch)
        if self._sink.tell() > self._limit:
            raise ResultTooLarge(too_large(self._ctx.vertex_name, self._sink.tell(), self._limit,
                                           "in one subtask alone"))

    def finish(self) -> None:
        """No rows: a stream of none, of the planned columns where the plan knows them
        (else nothing, and the client takes the columns from a sibling subtask)."""
        if self._writer is None and self._columns is not None:
            self._writer = pa.ipc.new_stream(self._sink, self._columns)
        if self._writer is not None:
            self._writer.close()
            self._ctx.collect_result(self._sink.getvalue().to_pybytes())

    def close(self) -> None:
        self._writer = None
