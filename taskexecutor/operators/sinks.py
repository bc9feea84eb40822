"""Sinks: where results go."""
from __future__ import annotations

import os
import uuid

import pyarrow.parquet as pq

from yarnflow.taskexecutor.operators.base import Operator, OperatorContext


class ParquetSink(Operator):
    """Each subtask writes ``part-NNNNN.parquet`` under ``path``: first to a hidden temp
    name, renamed when the subtask's input is complete, so a reader never sees a
    half-written file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def run(self, ctx: OperatorContext) -> None:
        os.makedirs(self.path, exist_ok=True)
        final = os.path.join(self.path, f"part-{ctx.subtask_index:05d}.parquet")
        temp = os.path.join(self.path, f".part-{ctx.subtask_index:05d}.{uuid.uuid4().hex}.tmp")
        writer: pq.ParquetWriter | None = None
        try:
            for batch in ctx.input(0):
                if writer is None:
                    writer = pq.ParquetWriter(temp, batch.schema)
                writer.write_batch(batch)
            if writer is None:
                return
            writer.close()
            writer = None
            os.replace(temp, final)
        finally:
            if writer is not None:
                writer.close()
            if os.path.exists(temp):
                os.remove(temp)

