"""A stream task's input channels, read as one: each channel by a thread of its own into
a small queue, and the task takes the next item from any channel it is not holding
back (a channel whose barrier arrived first waits for the rest: ``barrier_aligner``).

A held channel's queue fills and its reader stops, so its producer blocks on its
bounded subpartition: backpressure, not buffering. Only batches count against a
queue's room; events (barriers, watermarks) never wait for it.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator, Union

import pyarrow as pa

from yarnflow.core.errors import TaskCancelled
from yarnflow.core.streaming.events import Event
from yarnflow.taskexecutor.network.data_server import DataClients
from yarnflow.taskexecutor.network.input_gate import Channel
from yarnflow.taskexecutor.network.partition import PipelinedSubpartition
from yarnflow.taskexecutor.network.partition_manager import ResultPartitionManager

QUEUE_BATCHES = 2


class EndOfChannel:
    """The channel's producer finished (a bounded input read to its end)."""


END = EndOfChannel()
Item = Union[pa.RecordBatch, Event, EndOfChannel]


@dataclass(frozen=True)
class StreamChannel:
    input_index: int
    channel: Channel


class _Queue:
    def __init__(self) -> None:
        self.items: deque[Item] = deque()
        self.batches = 0


class StreamInputs:
    def __init__(self, channels: list[StreamChannel], local_data_address: str,
                 partitions: ResultPartitionManager, clients: DataClients,
                 cancelled: Callable[[], bool], request_timeout: float) -> None:
        self.channels = channels
        self._local = local_data_address
        self._partitions = partitions
        self._clients = clients
        self._cancelled = cancelled
        self._timeout = request_timeout
        self._cond = threading.Condition()
        self._queues = [_Queue() for _ in channels]
        self._error: BaseException | None = None
        self._next = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._pump, args=(i,), daemon=True,
                                          name=f"stream-in-{i}") for i in range(len(channels))]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def wake(self) -> None:
        """Interrupt a ``poll`` waiting for data (a mail for the task arrived)."""
        with self._cond:
            self._cond.notify_all()

    def _read(self, channel: Channel) -> Iterator[pa.RecordBatch | Event]:
        if len(channel.subpartitions) != 1:
            raise RuntimeError("a streaming channel reads one subpartition")
        subpartition = channel.subpartitions[0]
        if channel.data_address == self._local:
            partition = self._partitions.get(channel.partition_id, self._timeout, self._cancelled)
            sub = partition.subpartitions[subpartition]
            assert isinstance(sub, PipelinedSubpartition)
            yield from sub.read_items(lambda: self._cancelled() or self._stop.is_set())
            return
        for item in self._clients.read_items(channel.data_address, channel.partition_id,
                                             subpartition):
            if self._stop.is_set() or self._cancelled():
                raise TaskCancelled()
            if isinstance(item, pa.RecordBatch) and not item.num_columns:
                continue
            yield item

    def _pump(self, index: int) -> None:
        queue = self._queues[index]
        try:
            for item in self._read(self.channels[index].channel):
                with self._cond:
                    if isinstance(item, pa.RecordBatch):
                        while queue.batches >= QUEUE_BATCHES and not self._stop.is_set():
                            self._cond.wait(0.2)
                        queue.batches += 1
                    if self._stop.is_set():
                        return
                    queue.items.append(item)
                    self._cond.notify_all()
            with self._cond:
                queue.items.append(END)
                self._cond.notify_all()
        except BaseException as err:  # noqa: BLE001 - handed to the task's thread
            with self._cond:
                if self._error is None and not self._stop.is_set():
                    self._error = err
                self._cond.notify_all()

    def poll(self, timeout: float, blocked: Callable[[int], bool]) -> tuple[int, Item] | None:
        """The next item of a channel ``blocked`` does not hold back, as (channel,
        item); None after ``timeout`` seconds without one (or a ``wake``)."""
        with self._cond:
            found = self._take(blocked)
            if found is None:
                if self._error is not None:
                    raise self._error
                self._cond.wait(timeout)
                found = self._take(blocked)
            if found is None and self._error is not None:
                raise self._error
            return found

    def _take(self, blocked: Callable[[int], bool]) -> tuple[int, Item] | None:
        count = len(self._queues)
        for step in range(count):
            index = (self._next + step) % count
            queue = self._queues[index]
            if queue.items and not blocked(index):
                item = queue.items.popleft()
                if isinstance(item, pa.RecordBatch):
                    queue.batches -= 1
                    self._cond.notify_all()
                self._next = (index + 1) % count
                return index, item
        return None
