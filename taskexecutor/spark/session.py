"""The TaskExecutor's SparkSession: created by the first Spark task, reused by every
later task and job on this executor (a JVM start costs seconds; warm executors in a
session keep theirs).

How an executor's resources become Spark settings: its slots' cores are the local
master's threads (``local[n]``, n = ceil(slots x slot cpu)); the driver heap is
``taskmanager.spark.heap-fraction`` of the slots' memory (the rest holds Arrow data
on the Python side); the JVM's non-heap memory is ``taskmanager.spark.jvm-overhead``,
which the job's container plan adds to every slot whose operators use Spark. Spark's
console output goes to the executor's stdout, that is its log file, never to the
user's terminal.

A JVM that exits before it hands PySpark its gateway port (seen once in CI, on a
loaded machine, with no second occurrence in dozens of runs) is started again, up to
``START_ATTEMPTS`` times in all: a task should not fail for a JVM start that a second
try survives. Its own output, which says why it exited, is in the executor's log.
"""
from __future__ import annotations

import logging
import math
import threading
from typing import Any

from yarnflow.core.clock import SYSTEM_CLOCK
from yarnflow.taskexecutor.settings import SparkSettings
from yarnflow.core.resources import ResourceSpec

log = logging.getLogger(__name__)

START_ATTEMPTS = 3
_RETRY_PAUSE_S = 1.0


def _jvm_exited_on_start(err: BaseException) -> bool:
    condition = getattr(err, "getCondition", None)
    return callable(condition) and condition() == "JAVA_GATEWAY_EXITED"


class SparkSessionHolder:
    def __init__(self, settings: SparkSettings, num_slots: int, slot_profile: ResourceSpec,
                 scratch_dir: str) -> None:
        self._settings = settings
        self._num_slots = num_slots
        self._slot_profile = slot_profile
        self._scratch_dir = scratch_dir
        self._lock = threading.Lock()
        self._session: Any = None
        self.sessions_created = 0

    def settings(self) -> dict[str, str]:
        overhead = self._settings.jvm_overhead_mb
        slot_memory = max(self._slot_profile.memory_mb - overhead, 128)
        heap_mb = max(256, int(self._num_slots * slot_memory
                               * self._settings.heap_fraction))
        cores = max(1, math.ceil(self._num_slots * self._slot_profile.cpu - 1e-9))
        settings = {
            "spark.master": f"local[{cores}]",
            "spark.driver.memory": f"{heap_mb}m",
            "spark.sql.shuffle.partitions": str(cores),
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.local.dir": self._scratch_dir,
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            "spark.sql.session.timeZone": "UTC",
        }
        jvm_options = self._settings.jvm_options
        if jvm_options:
            settings["spark.driver.extraJavaOptions"] = jvm_options
        return settings

    def get(self) -> Any:
        """The executor's session, started on first use."""
        with self._lock:
            if self._session is None:
                try:
                    from pyspark.sql import SparkSession
                except ImportError:
                    raise RuntimeError(
                        "this job uses Spark operators but pyspark is not installed where "
                        "the TaskExecutor runs: pip install 'yarnflow[spark]'") from None
                builder = SparkSession.builder.appName("yarnflow-taskexecutor")
                settings = self.settings()
                for key, value in settings.items():
                    builder = builder.config(key, value)
                self._session = self._start(builder)
                self._session.sparkContext.setLogLevel("WARN")
                self.sessions_created += 1
                log.info("started a SparkSession (%s, heap %s) for this TaskExecutor",
                         settings["spark.master"], settings["spark.driver.memory"])
            return self._session

    def _start(self, builder: Any) -> Any:
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                return builder.getOrCreate()
            except Exception as err:
                if not _jvm_exited_on_start(err) or attempt == START_ATTEMPTS:
                    raise
                log.warning("Spark's JVM exited before it started (attempt %d of %d; its "
                            "output is above): starting it again", attempt, START_ATTEMPTS)
                SYSTEM_CLOCK.sleep(_RETRY_PAUSE_S * attempt)
        raise AssertionError("unreachable")

    def stop(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.stop()
                self._session = None
