"""How other components reach a JobMaster (Flink's JobMasterGateway); a handle is
fenced with the JobMasterId it was made for. Today the ResourceManager's calls; the
TaskExecutors still reach the JobMaster through its gRPC stub directly."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol


class JobMasterGateway(Protocol):
    def disconnect_task_executor(self, resource_id: str, reason: str) -> "Future[None]":
        """The executor is gone: its slots and the tasks in them are lost."""
        ...

    def notify_allocation_failure(self, allocation_id: str, cause: str) -> "Future[None]":
        """A slot request cannot be served (workers keep failing to start)."""
        ...
