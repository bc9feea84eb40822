"""Shared fixtures. Timeouts are shortened so failure paths finish in seconds."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import pytest

from yarnflow.conf import Configuration

FAST = [
    "heartbeat.interval=0.5 s", "heartbeat.timeout=5 s",
    "resourcemanager.taskmanager-timeout=2 s", "slot.idle.timeout=1 s",
    "slot.request.timeout=60 s", "job.cancel.timeout=10 s",
    "taskmanager.network.partition-request-timeout=20 s",
]

# For a test about how a failure looks, not about recovering from it: the default
# restart strategy would retry user code that always raises for about half a minute.
NO_RESTART = ["restart-strategy.type=none"]


@pytest.fixture
def fast_config() -> Configuration:
    return Configuration.load(overrides=FAST)


def wait_until(condition: Callable[[], object], timeout: float, what: str,
               interval: float = 0.05) -> object:
    """Poll ``condition`` until it is truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def executor_logs(log_dir: Path, lines: int = 60) -> str:
    """The last ``lines`` of every executor log under ``log_dir``, for an assertion's
    message: CI keeps no files, so a failure must carry its evidence."""
    parts = []
    for log in sorted(log_dir.rglob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        parts.append(f"\n--- {log.name} (last {len(tail)} lines) ---\n" + "\n".join(tail))
    return "".join(parts)
