"""The ``local`` driver: TaskExecutors as subprocesses of this machine."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from yarnflow.appmaster.resourcemanager.settings import LocalDriverSettings
from yarnflow.core.ids import ResourceID
from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver, WorkerEvents
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.conf import Configuration
from yarnflow.core.resources import ResourceSpec

log = logging.getLogger(__name__)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"process killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"process killed by signal {-code}"
    return f"process exited with code {code}"


class LocalDriver(ResourceDriver):
    """``log_dir`` may outlive ``workdir``: a failure message names an executor's log,
    and the user reads it after the run's scratch space is gone."""

    def __init__(self, config: Configuration, workdir: Path, tls_dir: Path,
                 log_dir: Path | None = None) -> None:
        self._config = config       # raw, only to write for the executors it starts
        self._settings = LocalDriverSettings.of(config)
        self._workdir = workdir
        self._log_dir = log_dir or workdir
        self._tls_dir = tls_dir
        self._procs: dict[ResourceID, subprocess.Popen[bytes]] = {}
        self._released: set[ResourceID] = set()
        self._events: WorkerEvents | None = None
        self._rm_address = ""
        self._lock = threading.Lock()
        self._conf_file = workdir / "yarnflow.json"

    def start(self, events: WorkerEvents, resource_manager_address: str) -> None:
        self._events = events
        self._rm_address = resource_manager_address
        self._workdir.mkdir(parents=True, exist_ok=True)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        self._conf_file.write_text(self._config.to_json())

    def request_worker(self, spec: WorkerSpec, hosts: tuple[str, ...] = (),
                       avoid: frozenset[str] = frozenset()) -> ResourceID:
        resource_id = ResourceID(f"local-te-{uuid.uuid4().hex[:8]}")
        python = self._settings.python or sys.executable
        log_file = self._log_file(resource_id)
        command = [python, "-m", "yarnflow.taskexecutor",
                   "--resource-id", resource_id, "--rm-address", self._rm_address,
                   "--tls-dir", str(self._tls_dir), "--conf", str(self._conf_file),
                   "--slots", str(spec.num_slots), "--slot-cpu", str(spec.slot_profile.cpu),
                   "--slot-memory", str(spec.slot_profile.memory_mb),
                   "--slot-node-label", spec.slot_profile.node_label,
                   "--worker-spec", spec.name, "--workdir", str(self._workdir / resource_id),
                   "--log-file", str(log_file)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(log_file, "ab") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        with self._lock:
            self._procs[resource_id] = proc
        threading.Thread(target=self._watch, args=(resource_id, proc),
                         name=f"watch-{resource_id}", daemon=True).start()
        log.info("started TaskExecutor %s (pid %d) for worker spec %s; log %s",
                 resource_id, proc.pid, spec.name, log_file)
        return resource_id

    def _watch(self, resource_id: ResourceID, proc: subprocess.Popen[bytes]) -> None:
        code = proc.wait()
        with self._lock:
            self._procs.pop(resource_id, None)
            released = resource_id in self._released
        if not released and self._events is not None:
            self._events.on_worker_terminated(
                resource_id, f"{describe_exit(code)} (log: {self._log_file(resource_id)})")

    def _log_file(self, resource_id: ResourceID) -> Path:
        return self._log_dir / f"{resource_id}.log"

    def release_worker(self, resource_id: ResourceID) -> None:
        with self._lock:
            self._released.add(resource_id)
            proc = self._procs.get(resource_id)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            threading.Thread(target=_kill_after, args=(proc, 10.0), daemon=True).start()

    def pid_of(self, resource_id: ResourceID) -> int | None:
        with self._lock:
            proc = self._procs.get(resource_id)
        return proc.pid if proc else None

    def max_worker_resources(self) -> ResourceSpec:
        return self._settings.largest_worker

    def stop(self) -> None:
        with self._lock:
            procs = list(self._procs.items())
            self._released.update(rid for rid, _ in procs)
        for _, proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for _, proc in procs:
            _kill_after(proc, 10.0)


def _kill_after(proc: subprocess.Popen[bytes], grace: float) -> None:
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
