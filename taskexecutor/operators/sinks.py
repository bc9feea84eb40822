"""Sinks: where results go, and how a job's output becomes visible all at once."""
from __future__ import annotations

import os
import shutil
import uuid

import pyarrow.parquet as pq

from yarnflow.taskexecutor.operators.base import Operator, OperatorContext


class DirectoryCommitter:
    """A job's output directory appears whole or not at all (Hadoop's output committer,
    Flink's FinalizeOnMaster). Subtasks write into a hidden staging directory beside
    the target, named for the job; when the job has FINISHED the JobMaster renames it
    onto the target (replacing an older output only then); when the job fails or is
    cancelled it deletes it. A reader of the target never sees a partial result."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)

    def staging(self, job_id: str) -> str:
        parent, base = os.path.split(self.path)
        return os.path.join(parent, f".{base}.yarnflow-staging-{job_id}")

    def commit(self, job_id: str) -> None:
        staging = self.staging(job_id)
        os.makedirs(staging, exist_ok=True)       # a job that wrote no rows: an empty output
        old = None
        if os.path.lexists(self.path):
            parent, base = os.path.split(self.path)
            old = os.path.join(parent, f".{base}.yarnflow-replaced-{job_id}")
            os.replace(self.path, old)
        os.replace(staging, self.path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def abort(self, job_id: str) -> None:
        shutil.rmtree(self.staging(job_id), ignore_errors=True)


class ParquetSink(Operator):
    """Each subtask writes ``part-NNNNN.parquet`` into the job's staging directory (see
    DirectoryCommitter), under a temporary name until its input is complete."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.committer = DirectoryCommitter(path)

    def run(self, ctx: OperatorContext) -> None:
        staging = self.committer.staging(ctx.job_id)
        os.makedirs(staging, exist_ok=True)
        final = os.path.join(staging, f"part-{ctx.subtask_index:05d}.parquet")
        temp = os.path.join(staging, f".part-{ctx.subtask_index:05d}.{uuid.uuid4().hex}.tmp")
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
