"""How a JobMaster reaches the ResourceManager (Flink's ResourceManagerGateway, as a
JobMaster uses it): a handle bound to one job and fenced both ways (the JobMasterId
it registered with, the ResourceManagerId it was given). The gRPC implementation is
``yarnflow.rpc.gateways.GrpcResourceManagerGateway``."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Protocol

from yarnflow.core.resources import ResourceSpec


class ResourceManagerGateway(Protocol):
    def request_slot(self, allocation_id: str, profile: ResourceSpec) -> "Future[Any]": ...
    def cancel_slot_request(self, allocation_id: str) -> "Future[Any]": ...
    def disconnect_job_master(self, reason: str) -> "Future[Any]": ...
