"""In-memory stand-ins for a JobMaster's peers, behind the gateway interfaces."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from yarnflow.appmaster.jobmaster.jobmaster import JobMaster
from yarnflow.appmaster.jobmaster.slotpool import TaskExecutorLocation
from yarnflow.appmaster.jobmaster.slotpool.slot_pool import SlotOffer
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.generated import common_pb2, jobmaster_pb2
from yarnflow.rpc.codec import jobgraph_to_proto


def done(value: Any = None) -> "Future[Any]":
    future: Future[Any] = Future()
    future.set_result(value)
    return future


class FakeTaskExecutor:
    def __init__(self, resource_id: str, host: str = "host-a") -> None:
        self.location = TaskExecutorLocation(resource_id, host, f"{resource_id}:1",
                                             f"{resource_id}:2")
        self.submitted: list[Any] = []
        self.cancelled: list[str] = []
        self.freed: list[str] = []

    def submit_task(self, descriptor: Any) -> "Future[Any]":
        self.submitted.append(descriptor)
        return done()

    def cancel_task(self, attempt_id: str) -> "Future[Any]":
        self.cancelled.append(attempt_id)
        return done()

    def free_slot(self, allocation_id: str, cause: str) -> "Future[Any]":
        self.freed.append(allocation_id)
        return done()

    def release_job_partitions(self, job_id: str) -> "Future[Any]":
        return done()


class FakeResourceManager:
    def __init__(self) -> None:
        self.requests: dict[str, ResourceSpec] = {}

    def request_slot(self, allocation_id: str, profile: ResourceSpec) -> "Future[Any]":
        self.requests[allocation_id] = profile
        return done()

    def cancel_slot_request(self, allocation_id: str) -> "Future[Any]":
        self.requests.pop(allocation_id, None)
        return done()


class Harness:
    """A real JobMaster wired to fake executors and a fake ResourceManager."""

    def __init__(self, graph: JobGraph, config: Configuration | None = None) -> None:
        self.executors: dict[str, FakeTaskExecutor] = {}
        self.rm = FakeResourceManager()
        self.jm = JobMaster(jobgraph_to_proto(graph), config or Configuration.load(), "jm:0",
                            lambda loc, jm_id: self.executors[loc.resource_id])
        self.jm.connect_resource_manager(self.rm)

    def executor(self, resource_id: str, host: str = "host-a") -> FakeTaskExecutor:
        return self.executors.setdefault(resource_id, FakeTaskExecutor(resource_id, host))

    def start(self) -> None:
        self.jm.start()

    def call(self, fn: Any, *args: Any) -> Any:
        return self.jm.main.call(fn, *args)

    def offer_pending(self, resource_ids: list[str], host_of: dict[str, str] | None = None) -> None:
        """Answer every pending slot request with a slot on the executors, round-robin."""
        def offer() -> None:
            pending = list(self.rm.requests.items())
            self.rm.requests.clear()
            for i, (allocation_id, profile) in enumerate(pending):
                rid = resource_ids[i % len(resource_ids)]
                te = self.executor(rid, (host_of or {}).get(rid, "host-a"))
                self.jm.offer_slots(te.location, [SlotOffer(allocation_id, i, profile)])
        self.call(offer)

    def offer_free_slots(self, per_executor: dict[str, int], profile: ResourceSpec) -> None:
        """Offer unsolicited slots (as a session cluster's warm executors would)."""
        def offer() -> None:
            for rid, count in per_executor.items():
                te = self.executor(rid)
                self.jm.offer_slots(te.location, [SlotOffer(f"{rid}-slot{i}", i, profile)
                                                  for i in range(count)])
        self.call(offer)

    def report(self, attempt_id: str, state: int) -> None:
        self.call(self.jm.update_task_execution_state, jobmaster_pb2.TaskExecutionState(
            job_master_id=self.jm.job_master_id, attempt_id=attempt_id, state=state))

    def deployed(self) -> list[Any]:
        return [tdd for te in self.executors.values() for tdd in te.submitted]

    def placement(self) -> dict[str, list[tuple[str, int]]]:
        """allocation id -> [(vertex name, subtask index)] of deployed tasks."""
        out: dict[str, list[tuple[str, int]]] = {}
        for tdd in self.deployed():
            out.setdefault(tdd.allocation_id, []).append((tdd.vertex_name, tdd.subtask_index))
        return out

    def close(self) -> None:
        self.jm.shutdown()


RUNNING, FINISHED = common_pb2.RUNNING, common_pb2.FINISHED
