"""An input gate: all channels of one input of a task, read as one stream of batches.

A channel whose producer runs on this same TaskExecutor is read straight from the
partition (no serialization); others over Arrow Flight, and a result on the cluster
file system from its files there. Several channels are read
concurrently into a small bounded queue, so a slow channel does not stall the rest
and memory stays bounded.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Callable, Iterator

import pyarrow as pa

from yarnflow.core.deployment import InputGateDescriptor, stored_result_dir
from yarnflow.core.fs import FileSystemSettings, open_filesystem
from yarnflow.core.errors import TaskCancelled
from yarnflow.rpc.codec import shuffle_descriptors_from_bytes
from yarnflow.taskexecutor.network.data_server import DataClients
from yarnflow.taskexecutor.network.partition_manager import ResultPartitionManager
from yarnflow.taskexecutor.network.partition_store import read_stored, subpartition_uri


@dataclass(frozen=True)
class Channel:
    """One producer partition, and the subpartitions of it this task reads: one, or
    a contiguous range of them under adaptive execution, read one after the other."""
    partition_id: str
    data_address: str
    subpartitions: range
    slice: int = 0            # of each subpartition, the batches whose index is slice
    slices: int = 1           # modulo slices (a skewed subpartition shared out)


def partition_id(result_id: str, index: int, attempt: int) -> str:
    return f"{result_id}#{index}#{attempt}"


def channels_of(gate: InputGateDescriptor, subtask_index: int) -> list[Channel]:
    shuffle = shuffle_descriptors_from_bytes(gate.shuffle_descriptors.data)
    positions: range = range(len(shuffle.producer_location))
    share = (0, 1)
    if shuffle.consumer_reads:           # adaptive: this subtask's share, decided at run time
        read = shuffle.consumer_reads[subtask_index]
        positions, subpartitions = read.partitions, read.subpartitions
        share = (read.slice, read.slices)
    else:
        subpartition = gate.subpartition_index(subtask_index)
        subpartitions = range(subpartition, subpartition + 1)
    indexes = list(gate.consumed_partitions) or range(len(shuffle.producer_location))
    out = []
    for k in positions:
        where = shuffle.producer_location[k]
        out.append(Channel(partition_id(shuffle.result_id, indexes[k], shuffle.producer_attempt[k]),
                           shuffle.data_addresses[where], subpartitions, *share))
    return out


class InputGate:
    def __init__(self, channels: list[Channel], local_data_address: str,
                 partitions: ResultPartitionManager, clients: DataClients,
                 cancelled: Callable[[], bool], request_timeout: float,
                 filesystem: FileSystemSettings = FileSystemSettings(),
                 channel_ended: Callable[[], None] = lambda: None) -> None:
        """``channel_ended()`` is called in the reading thread as each channel is read
        through (the task's input progress)."""
        self._channels = channels
        self._channel_ended = channel_ended
        self._local = local_data_address
        self._partitions = partitions
        self._clients = clients
        self._cancelled = cancelled
        self._timeout = request_timeout
        self._filesystem = filesystem

    def _read_channel(self, channel: Channel) -> Iterator[pa.RecordBatch]:
        for subpartition in channel.subpartitions:
            batches = self._read_subpartition(channel, subpartition)
            if channel.slices == 1:
                yield from batches
                continue
            for index, batch in enumerate(batches):
                if index % channel.slices == channel.slice:
                    yield batch

    def _read_subpartition(self, channel: Channel, subpartition: int) -> Iterator[pa.RecordBatch]:
        stored = stored_result_dir(channel.data_address)
        if stored is not None:
            _, index, attempt = channel.partition_id.rsplit("#", 2)
            uri = subpartition_uri(stored, int(index), int(attempt), subpartition)
            yield from read_stored(open_filesystem(uri, self._filesystem), uri, self._cancelled)
            return
        if channel.data_address == self._local:
            partition = self._partitions.get(channel.partition_id, self._timeout, self._cancelled)
            yield from partition.subpartitions[subpartition].read(self._cancelled)
            return
        for batch in self._clients.read(channel.data_address, channel.partition_id,
                                        subpartition):
            if self._cancelled():
                raise TaskCancelled()
            if batch.num_columns:     # an empty partition streams the empty schema
                yield batch

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if len(self._channels) == 1:
            # One channel: read in the task thread. A remote read ends or errors when its
            # producer ends, fails or dies, and cancellation is checked per batch.
            yield from self._read_channel(self._channels[0])
            self._channel_ended()
            return
        yield from self._read_concurrently()

    def _read_concurrently(self) -> Iterator[pa.RecordBatch]:
        out: queue.Queue[object] = queue.Queue(maxsize=max(4, min(len(self._channels), 64)))
        done = object()
        stop = threading.Event()

        def pump(channel: Channel) -> None:
            try:
                for batch in self._read_channel(channel):
                    while not stop.is_set():
                        try:
                            out.put(batch, timeout=0.2)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                out.put(done)
            except BaseException as err:  # noqa: BLE001 - delivered to the task thread
                out.put(err)

        threads = [threading.Thread(target=pump, args=(c,), daemon=True,
                                    name=f"gate-{c.partition_id[-12:]}") for c in self._channels]
        for thread in threads:
            thread.start()
        remaining = len(threads)
        try:
            while remaining:
                try:
                    item = out.get(timeout=0.2)
                except queue.Empty:
                    if self._cancelled():
                        raise TaskCancelled()
                    continue
                if item is done:
                    remaining -= 1
                    self._channel_ended()
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            stop.set()
