"""The allocator a TaskExecutor process gives Arrow: jemalloc where the wheel has it,
chosen before pyarrow loads (a choice made later is silently ignored), with freed pages
returned after ARROW_DECAY_MS. Each check is a fresh interpreter, as an executor is."""
from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

PROBE = ("import yarnflow.taskexecutor.__main__ as te, pyarrow as pa; "
         "te.return_freed_arrow_memory(); print(pa.default_memory_pool().backend_name)")


def backend_in_an_executor(**environment: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    env.update(environment)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux")
                    or "jemalloc" not in pa.supported_memory_backends(),
                    reason="jemalloc is chosen on Linux, where pyarrow's wheels have it")
def test_an_executor_allocates_with_jemalloc():
    assert backend_in_an_executor() == "jemalloc"


def test_the_environment_chooses_another_allocator():
    assert backend_in_an_executor(ARROW_DEFAULT_MEMORY_POOL="system") == "system"


def test_an_executors_jemalloc_keeps_two_arenas_unless_the_environment_says_otherwise():
    """Two arenas: a page one thread frees is reused by the next batch of another,
    instead of idling in one of eight arenas until the purging thread gets to it."""
    probe = ("import os, yarnflow.taskexecutor.__main__, pyarrow; "
             "print(os.environ['JE_ARROW_MALLOC_CONF'])")
    env = {k: v for k, v in os.environ.items() if k != "JE_ARROW_MALLOC_CONF"}
    for given, kept in ((None, "narenas:2"), ("narenas:4", "narenas:4")):
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              env={**env, **({"JE_ARROW_MALLOC_CONF": given} if given else {})},
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == kept
