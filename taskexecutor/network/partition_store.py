"""BLOCKING results on the cluster file system (``execution.batch.partition-store: dfs``).

Each subpartition is one Arrow IPC stream file, ``<result dir>/<partition>.<attempt>.
<subpartition>.arrows``, written by the producer and closed before it reports FINISHED,
so a finished producer's data is durable. Consumers read the files themselves: the
result outlives the executor that wrote it and the ApplicationMaster that scheduled it,
which is what lets a new ApplicationMaster attempt skip the regions that had finished.

A subpartition that received nothing is an empty file, so a missing file always means
lost data (an upstream failure), never an empty input. The stream format is read
front to back in large ranges (one WebHDFS request per few megabytes), where the file
format would need a request per batch.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pyarrow as pa

from yarnflow.core.fs import FileSystem
from yarnflow.core.errors import TaskCancelled

# Bytes read from the cluster file system per request.
READ_BUFFER = 4 << 20


def subpartition_uri(result_dir: str, partition: int, attempt: int, subpartition: int) -> str:
    return f"{result_dir.rstrip('/')}/{partition}.{attempt}.{subpartition}.arrows"


class StoredSubpartition:
    """One subpartition written to the cluster file system as the producer emits."""

    def __init__(self, fs: FileSystem, uri: str) -> None:
        self._fs = fs
        self._uri = uri
        self._sink: Any = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self.bytes_written = 0

    def add(self, batch: pa.RecordBatch, cancelled: Callable[[], bool]) -> None:
        if self._writer is None:
            self._sink = self._fs.open_output(self._uri)
            self._writer = pa.ipc.new_stream(self._sink, batch.schema)
        self._writer.write_batch(batch)
        self.bytes_written += batch.nbytes

    def finish(self) -> None:
        """Durable once this returns: HDFS acknowledges a closed file's last packet."""
        if self._writer is None:
            self._fs.open_output(self._uri).close()      # empty, but there
            return
        self._writer.close()
        self._sink.close()

    def wait_consumed(self, cancelled: Callable[[], bool]) -> None:
        return   # consumers read the file, not this executor

    def read(self, cancelled: Callable[[], bool] = lambda: False) -> Iterator[pa.RecordBatch]:
        raise RuntimeError(f"{self._uri} is read from the file system (read_stored)")

    def release(self) -> None:
        """The file stays: the JobMaster removes the job's results when the job ends,
        and a producer that failed half way leaves a file no consumer is sent to."""
        if self._sink is not None and not self._sink.closed:
            self._sink.close()


def read_stored(fs: FileSystem, uri: str,
                cancelled: Callable[[], bool]) -> Iterator[pa.RecordBatch]:
    """The batches of one stored subpartition. FileNotFoundError when it is not there
    (its producer's output was lost)."""
    with fs.open_input(uri) as raw:
        if raw.size() == 0:
            return                                   # the producer sent it nothing
        for batch in pa.ipc.open_stream(pa.BufferedInputStream(raw, READ_BUFFER)):
            if cancelled():
                raise TaskCancelled()
            yield batch
