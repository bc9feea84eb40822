"""The options a job carries to its JobMaster (Flink's job-level configuration).

A per-job application's ApplicationMaster runs with the client's configuration, but a
session's runs with the session's: without these, ``-D
execution.batch.adaptive.avg-data-volume-per-task=64m`` given to one job in a session
would plan the job as adaptive on the client and then be ignored where the decisions are
taken. Only how one job is executed travels; how the application is deployed (its
containers, security, the session's warm executors) stays the application's."""
from __future__ import annotations

from typing import Mapping

from yarnflow.conf.configuration import Configuration

JOB_LEVEL_PREFIXES = ("execution.batch.adaptive.", "table.optimizer.",
                      "execution.checkpointing.", "state.checkpoints.", "state.savepoints.",
                      "execution.savepoint.")
# single options of a job's own: rows per batch its sources emit (the JobMaster sends it
# with each deployment, so a session's executors use the job's)
JOB_LEVEL_KEYS = frozenset({"pipeline.batch-rows", "pipeline.collect.max-result-size",
                            "execution.runtime-mode", "execution.buffer-timeout",
                            "pipeline.max-parallelism"})
# A session's warm executors are paid for, so it lets a larger one serve a sized slot;
# a job asking for exact sizes there would wait for containers the session never starts.
APPLICATION_ONLY = frozenset({"execution.batch.adaptive.slot-memory.exact"})


def is_job_level(key: str) -> bool:
    return (key.startswith(JOB_LEVEL_PREFIXES) or key in JOB_LEVEL_KEYS) \
        and key not in APPLICATION_ONLY


def job_level(config: Configuration) -> dict[str, str]:
    """The job-level options a file or ``-D`` set, as the raw strings that ship."""
    return {key: str(value) for key, value in sorted(config.to_dict().items())
            if is_job_level(key)}


def for_job(application: Configuration, job: Mapping[str, str]) -> Configuration:
    """The application's configuration with a job's own job-level options over it; any
    other key a job names is not the job's to change and is left as the application has it."""
    own = {key: value for key, value in job.items() if is_job_level(key)}
    if not own:
        return application
    merged = application.copy()
    for key, value in own.items():
        merged.set_raw(key, value)
    return merged
