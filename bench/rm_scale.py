"""The control plane at cluster scale: an ApplicationMaster's ResourceManager and one
JobMaster with a thousand TaskExecutors. Prints one JSON object.

    python bench/rm_scale.py --executors 1000 [--heartbeat-interval 10] [--measure 30]
    python bench/rm_scale.py --quick          # 50 executors, 1 s heartbeats (CI)

The ApplicationMaster is a subprocess running the real components (``ApplicationMasterComponents``:
ResourceManager, JobMaster, one gRPC server with mutual TLS) with a driver that starts
no workers. The executors are lightweight ones in this process: each has its own
mutual-TLS gRPC server (the ResourceManager and JobMaster dial each one) and its own
channel to the ApplicationMaster, and speaks the real wire protocol through the real
gateways, but runs no task. With the interval given:

1. all executors register at once, each with two free slots: ``register_all_s``;
2. the ApplicationMaster submits a job with one subtask per executor; its slots are
   requested, allocated, offered and deployed, and each subtask reports RUNNING:
   ``deploy_all_s``;
3. for ``--measure`` seconds, every executor heartbeats the ResourceManager and the
   JobMaster once per interval (spread evenly), while a second job asks the
   ResourceManager for the other slot of every executor at an even rate:
   ``heartbeat_p99_ms`` (answer latency of both kinds of heartbeat, as the executor
   sees it, over the whole run), ``slot_request_p99_ms`` (the second job's request sent
   -> the executor asked for the slot), and the ApplicationMaster's ``rm_cpu_percent``
   (of one core, over the run) and ``am_rss_mb``. ``heartbeat_rm_p99_ms`` and
   ``heartbeat_jm_p99_ms`` split the heartbeats by peer, ``heartbeat_steady_p99_ms``
   counts only those after every subtask was RUNNING (the deployment's storm aside);
   ``heartbeat_max_ms`` the slowest, and ``am_gc_pause_max_ms`` /
   ``executors_gc_pause_max_ms`` the longest garbage collection in the
   ApplicationMaster and in this process (which times the heartbeats), to tell a
   stalled ResourceManager from a stalled stopwatch.
"""
from __future__ import annotations

import argparse
import gc
import json
import shutil
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent import futures
from pathlib import Path
from typing import Any, Callable

import grpc
import psutil

from yarnflow.conf import Configuration, options
from yarnflow.core.clock import poll_until
from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobID, JobMasterId, ResourceID, ResourceManagerId
from yarnflow.core.messages import (SlotOffer, SlotReport, SlotStatus, TaskExecutionState,
                                    TaskExecutorLocation, TaskExecutorRegistration)
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import ExecutionState
from yarnflow.rpc.gateways.jobmaster import GrpcJobMasterGateway
from yarnflow.rpc.gateways.resourcemanager import (GrpcResourceManagerExecutorGateway,
                                                   GrpcResourceManagerGateway,
                                                   GrpcResourceManagerRegistrationGateway)
from yarnflow.rpc.generated import common_pb2, taskexecutor_pb2, taskexecutor_pb2_grpc
from yarnflow.rpc.security import CLUSTER_NAME, TlsCredentials, generate_cluster_credentials

SLOTS = 2
TIMEOUT = 30.0


def settings(heartbeat_interval: float) -> dict[str, str]:
    return {"heartbeat.interval": f"{heartbeat_interval}s", "heartbeat.timeout": "600s",
            "resourcemanager.taskmanager-timeout": "3600s", "slot.idle.timeout": "3600s",
            "slot.request.timeout": "600s", "taskmanager.numberOfTaskSlots": str(SLOTS)}


class GcPauses:
    """The longest pause of this process's garbage collector: a stop-the-world
    collection stalls every thread that wants the interpreter, so a heartbeat answered
    (or timed) during one is late by its length."""

    def __init__(self) -> None:
        self.longest_ms = 0.0
        self._started = 0.0
        gc.callbacks.append(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest_ms = max(self.longest_ms, (time.perf_counter() - self._started) * 1000)


# --- the ApplicationMaster ---------------------------------------------------------
def serve(directory: Path, executors: int, heartbeat_interval: float) -> None:
    """Run the ApplicationMaster's components until killed; submit the job once every
    executor has registered (so no worker is ever asked for)."""
    from yarnflow.appmaster.components import ApplicationMasterComponents
    from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver
    import pyarrow as pa
    from yarnflow.core.jobgraph import JobGraph, JobVertex
    from yarnflow.core.operators.sources import TableSource
    from yarnflow.core.user_code import UserCode
    from yarnflow.core.worker_spec import WorkerSpec

    class NoWorkers(ResourceDriver):
        """The executors are all started by the benchmark."""
        def start(self, events: Any, resource_manager_address: str) -> None: ...
        def request_worker(self, spec: WorkerSpec, hosts: tuple[str, ...] = (),
                           avoid: frozenset[str] = frozenset()) -> ResourceID:
            raise RuntimeError("the benchmark asked for no worker: every executor is started already")
        def release_worker(self, resource_id: ResourceID) -> None: ...
        def max_worker_resources(self) -> ResourceSpec:
            return ResourceSpec(64, 1 << 20)
        def stop(self) -> None: ...

    from yarnflow.appmaster.gc_tuning import tune_garbage_collector
    tune_garbage_collector()      # as the ApplicationMaster's process does
    pauses = GcPauses()
    logging.basicConfig(level=os.environ.get("RM_SCALE_LOG", "WARNING"),
                        format="am %(levelname)s %(name)s: %(message)s")
    config = Configuration(settings(heartbeat_interval))
    am = ApplicationMasterComponents(config, NoWorkers(), TlsCredentials.read(directory)).start()
    (directory / "address.tmp").write_text(am.address)
    os.replace(directory / "address.tmp", directory / "address")
    rm = am.resource_manager
    if poll_until(lambda: rm.main.call(lambda: len(rm.executors) >= executors or None),
                  TIMEOUT * 4, 0.05) is None:
        sys.exit(f"only {rm.main.call(lambda: len(rm.executors))} of {executors} executors registered")
    graph = JobGraph("rm-scale")
    # a small in-memory source: the JobMaster cuts its splits; no executor reads them
    source = TableSource(pa.table({"x": list(range(executors))}))
    graph.add_vertex(JobVertex("source", UserCode.of(source), executors, num_inputs=0))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    am.submit(graph.resolve(1))
    signal.sigwait({signal.SIGTERM})      # the benchmark ends it; nothing to clean up
    (directory / "gc-pause").write_text(str(pauses.longest_ms))
    os._exit(0)


# --- the executors -----------------------------------------------------------------
class Latencies:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: dict[str, list[float]] = {"heartbeat": [], "slot_request": [],
                                               "heartbeat_rm": [], "heartbeat_jm": [],
                                               "heartbeat_steady": []}
        self.steady = False

    def add(self, kind: str, seconds: float, *also: str) -> None:
        with self._lock:
            for k in (kind, *also):
                self.values[k].append(seconds * 1000)
            if self.steady and kind == "heartbeat":
                self.values["heartbeat_steady"].append(seconds * 1000)

    def p99(self, kind: str) -> float:
        values = sorted(self.values[kind])
        return round(values[min(len(values) - 1, int(len(values) * 0.99))], 1) if values else -1.0


class Executor(taskexecutor_pb2_grpc.TaskExecutorServicer):
    """One lightweight TaskExecutor: a slot table of two slots, no task thread."""

    def __init__(self, index: int, tls: TlsCredentials, master: str, pool: futures.Executor,
                 latencies: Latencies, slot_requested: dict[str, float],
                 running: list[ExecutionAttemptID]) -> None:
        self.resource_id = ResourceID(f"bench-te-{index}")
        self._pool = pool
        self._latencies = latencies
        self._slot_requested = slot_requested
        self._all_running = running       # every executor's subtasks reported RUNNING
        self.server = grpc.server(pool)
        taskexecutor_pb2_grpc.add_TaskExecutorServicer_to_server(self, self.server)
        port = self.server.add_secure_port("127.0.0.1:0", tls.server_credentials())
        self.server.start()
        self.location = TaskExecutorLocation(self.resource_id, "127.0.0.1", f"127.0.0.1:{port}",
                                             f"127.0.0.1:{port}")
        # its own connection to the ApplicationMaster, as a real executor has
        self.channel = grpc.secure_channel(master, tls.channel_credentials(), options=[
            ("grpc.ssl_target_name_override", CLUSTER_NAME), ("grpc.use_local_subchannel_pool", 1)])
        self.rm = GrpcResourceManagerExecutorGateway(self.channel, TIMEOUT)
        self.rm_id = ResourceManagerId("")
        self.profile = ResourceSpec(1, 1024)
        self._lock = threading.Lock()
        self.slots: list[tuple[AllocationID, JobID]] = [(AllocationID(""), JobID(""))] * SLOTS
        self.version = 0
        self.jm: GrpcJobMasterGateway | None = None
        self.running: list[ExecutionAttemptID] = []

    def report(self) -> SlotReport:
        with self._lock:
            return SlotReport(tuple(SlotStatus(i, self.profile, a, j)
                                    for i, (a, j) in enumerate(self.slots)), self.version)

    def register(self) -> "futures.Future[str]":
        return self.rm.register_task_executor(TaskExecutorRegistration(
            self.location, self.report(), worker_spec="bench"))

    # what the ResourceManager and the JobMaster call
    def RequestSlot(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC names
        asked = self._slot_requested.get(request.allocation_id)
        if asked is not None:
            self._latencies.add("slot_request", time.perf_counter() - asked)
        with self._lock:
            self.slots[request.slot_index] = (AllocationID(request.allocation_id), JobID(request.job_id))
            self.version += 1
            version = self.version
        if asked is None:     # the job's slot: offer it to its JobMaster
            self.jm = GrpcJobMasterGateway(self.channel, JobMasterId(request.job_master_id), TIMEOUT)
            offer = SlotOffer(AllocationID(request.allocation_id), request.slot_index, self.profile, "bench")
            self._pool.submit(self.jm.offer_slots, self.location, [offer])
        return taskexecutor_pb2.SlotAllocationReply(ok=True, report_version=version)

    def SubmitTask(self, request: Any, context: Any) -> Any:  # noqa: N802
        attempt = ExecutionAttemptID(request.attempt_id)
        with self._lock:
            self.running.append(attempt)
        assert self.jm is not None
        self.jm.update_task_execution_state(TaskExecutionState(attempt, ExecutionState.RUNNING)) \
            .add_done_callback(lambda f: f.exception() is None and self._all_running.append(attempt))
        return common_pb2.Ack(ok=True)

    def CancelTask(self, request: Any, context: Any) -> Any:  # noqa: N802
        return taskexecutor_pb2.CancelTaskResponse(known=False)

    def heartbeat(self) -> None:
        def timed(send: Callable[[], "futures.Future[Any]"], peer: str) -> None:
            sent = time.perf_counter()
            send().add_done_callback(lambda f: f.exception() is None and self._latencies.add(
                "heartbeat", time.perf_counter() - sent, peer))
        report = self.report()
        timed(lambda: self.rm.heartbeat_from_task_executor(self.rm_id, self.resource_id, report, False),
              "heartbeat_rm")
        if self.jm is not None:
            jm = self.jm
            with self._lock:
                attempts = [TaskExecutionState(a, ExecutionState.RUNNING) for a in self.running]
            timed(lambda: jm.heartbeat_from_task_executor(self.resource_id, attempts), "heartbeat_jm")


def start_calls_inline() -> None:
    """This process stands for 1,000 executor processes, each with its own idle sender
    thread (``rpc.gateways.calls``): sharing one here would queue every executor's
    heartbeat behind all the others', which no real executor does. The caller's thread
    starts each call instead, and the latency is timed from before it starts."""
    from yarnflow.rpc.gateways import calls

    class Inline(futures.Executor):
        def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> "futures.Future[Any]":
            done: futures.Future[Any] = futures.Future()
            done.set_result(fn(*args, **kwargs))
            return done
    calls._SENDER = Inline()  # type: ignore[assignment]


def run(executors: int, heartbeat_interval: float, measure: float) -> dict[str, Any]:
    start_calls_inline()
    pauses = GcPauses()
    directory = Path(tempfile.mkdtemp(prefix="rm-scale-"))
    tls = generate_cluster_credentials()
    tls.write(directory)
    master = subprocess.Popen([sys.executable, __file__, "--serve", str(directory),
                               "--executors", str(executors),
                               "--heartbeat-interval", str(heartbeat_interval)])
    pool = futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="executors")
    fleet: list[Executor] = []
    figures: dict[str, Any] = {}
    try:
        address_file = directory / "address"
        if poll_until(lambda: address_file.exists() or None, TIMEOUT, 0.05) is None:
            raise SystemExit(f"the ApplicationMaster did not start within {TIMEOUT:g} s")
        address = address_file.read_text()
        latencies = Latencies()
        slot_requested: dict[str, float] = {}
        running: list[ExecutionAttemptID] = []
        fleet = [Executor(i, tls, address, pool, latencies, slot_requested, running)
                 for i in range(executors)]
        # 1,000 executors' servers and channels in one heap, which each real executor
        # holds a small part of: out of the collector's way, or its full collections
        # (up to 850 ms seen) stall the stopwatch, not the ApplicationMaster
        from yarnflow.appmaster.gc_tuning import tune_garbage_collector
        tune_garbage_collector()
        am = psutil.Process(master.pid)
        cpu0, wall0 = sum(am.cpu_times()[:2]), time.perf_counter()

        t0 = time.perf_counter()
        registrations = [e.register() for e in fleet]
        for executor, registration in zip(fleet, registrations):
            executor.rm_id = ResourceManagerId(registration.result(timeout=TIMEOUT * 4))
        register_all_s = time.perf_counter() - t0

        stop = threading.Event()

        def heartbeats() -> None:
            pause = heartbeat_interval / len(fleet)
            while not stop.is_set():
                for executor in fleet:
                    if stop.is_set():
                        return
                    executor.heartbeat()
                    time.sleep(pause)      # a paced sender: one interval per round
        beating = threading.Thread(target=heartbeats, daemon=True)
        beating.start()

        t0 = time.perf_counter()
        if poll_until(lambda: len(running) >= executors or None, TIMEOUT * 4, 0.01) is None:
            raise SystemExit(f"{len(running)} of {executors} subtasks RUNNING within {TIMEOUT * 4:g} s")
        deploy_all_s = time.perf_counter() - t0
        latencies.steady = True

        # a second job asks for the other slot of every executor, evenly over --measure
        channel = fleet[0].channel
        job_id, jm_id = JobID(uuid.uuid4().hex), JobMasterId(uuid.uuid4().hex)
        rm_id = GrpcResourceManagerRegistrationGateway(channel, TIMEOUT).register_job_master(
            job_id, jm_id, address).result(TIMEOUT)
        second = GrpcResourceManagerGateway(channel, ResourceManagerId(rm_id), job_id, jm_id, address, TIMEOUT)
        end = time.perf_counter() + measure
        for _ in range(executors):
            allocation_id = uuid.uuid4().hex
            slot_requested[allocation_id] = time.perf_counter()
            second.request_slot(AllocationID(allocation_id), ResourceSpec(1, 1024), ())
            time.sleep(max(0.0, min(measure / executors, end - time.perf_counter())))
        if poll_until(lambda: len(latencies.values["slot_request"]) >= executors or None,
                      TIMEOUT, 0.05) is None:
            raise SystemExit(f"{len(latencies.values['slot_request'])} of {executors} slot "
                             f"requests reached an executor within {TIMEOUT:g} s")
        remaining = end - time.perf_counter()
        if remaining > 0:
            time.sleep(remaining)       # heartbeats go on for the whole measured time
        stop.set()
        beating.join(TIMEOUT)
        wall = time.perf_counter() - wall0
        figures.update({
            "executors": executors, "heartbeat_interval_s": heartbeat_interval,
            "register_all_s": round(register_all_s, 2), "deploy_all_s": round(deploy_all_s, 2),
            "heartbeat_p99_ms": latencies.p99("heartbeat"),
            "heartbeat_rm_p99_ms": latencies.p99("heartbeat_rm"),
            "heartbeat_jm_p99_ms": latencies.p99("heartbeat_jm"),
            "heartbeat_steady_p99_ms": latencies.p99("heartbeat_steady"),
            "heartbeats": len(latencies.values["heartbeat"]),
            "slot_request_p99_ms": latencies.p99("slot_request"),
            "rm_cpu_percent": round(100 * (sum(am.cpu_times()[:2]) - cpu0) / wall, 1),
            "am_rss_mb": round(am.memory_info().rss / 2**20, 1),
            "heartbeat_max_ms": round(max(latencies.values["heartbeat"], default=-1.0), 1),
            "executors_gc_pause_max_ms": round(pauses.longest_ms, 1),
        })
        return figures
    finally:
        master.send_signal(signal.SIGTERM)
        try:
            master.wait(TIMEOUT)
            figures["am_gc_pause_max_ms"] = round(float((directory / "gc-pause").read_text()), 1)
        except (subprocess.TimeoutExpired, OSError):
            master.kill()
        for executor in fleet:
            executor.server.stop(None)
            executor.channel.close()
        pool.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(directory, ignore_errors=True)     # the throw-away CA's keys too


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--executors", type=int, default=1000)
    parser.add_argument("--heartbeat-interval", type=float,
                        default=options.HEARTBEAT_INTERVAL.default)
    parser.add_argument("--measure", type=float, default=30.0, help="seconds of steady heartbeats")
    parser.add_argument("--quick", action="store_true", help="50 executors, 1 s heartbeats, 3 s")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.executors, args.heartbeat_interval)
        return
    if args.quick:
        args.executors, args.heartbeat_interval, args.measure = 50, 1.0, 3.0
    print(json.dumps(run(args.executors, args.heartbeat_interval, args.measure)))


if __name__ == "__main__":
    main()
