"""How a JobMaster talks to its peers. The gRPC implementations live in
``yarnflow.rpc.gateways``; unit tests and the scheduler benchmark use in-memory ones."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Protocol

from yarnflow.core.resources import ResourceSpec


class TaskExecutorGateway(Protocol):
    def submit_task(self, descriptor: Any) -> "Future[Any]": ...
    def cancel_task(self, attempt_id: str) -> "Future[Any]": ...
    def free_slot(self, allocation_id: str, cause: str) -> "Future[Any]": ...
    def release_job_partitions(self, job_id: str) -> "Future[Any]": ...


class ResourceManagerGateway(Protocol):
    def request_slot(self, allocation_id: str, profile: ResourceSpec) -> "Future[Any]": ...
    def cancel_slot_request(self, allocation_id: str) -> "Future[Any]": ...
