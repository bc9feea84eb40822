"""Typed settings, read once per component (issue 82): each component's options are
parsed where it starts into frozen settings; a session's job gets its own from its
job-level options; a value a component cannot use is refused naming its option."""
from __future__ import annotations

import dataclasses

import pytest

from yarnflow.appmaster.jobmaster.settings import JobMasterSettings, StorageSettings
from yarnflow.appmaster.resourcemanager.settings import (LocalDriverSettings,
                                                         ResourceManagerSettings,
                                                         YarnDriverSettings)
from yarnflow.appmaster.settings import (ApplicationMasterSettings, DispatcherSettings,
                                         WebMonitorSettings, YarnApplicationSettings)
from yarnflow.conf import ConfigError, Configuration
from yarnflow.conf.job_level import for_job
from yarnflow.taskexecutor.settings import TaskExecutorSettings

BUILDERS = [JobMasterSettings.of, ResourceManagerSettings.of, YarnDriverSettings.of,
            LocalDriverSettings.of, ApplicationMasterSettings.of, DispatcherSettings.of,
            WebMonitorSettings.of, YarnApplicationSettings.of, TaskExecutorSettings.of]


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__qualname__.split(".")[0])
def test_every_component_builds_frozen_settings_from_the_defaults(build):
    settings = build(Configuration.load())
    field = dataclasses.fields(settings)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(settings, field, None)


def test_the_settings_hold_the_options_values_parsed():
    config = Configuration.load(overrides=["heartbeat.interval=3 s", "heartbeat.timeout=1 min",
                                           "taskmanager.memory.overhead=1g",
                                           "restart-strategy.type=fixed-delay"])
    te = TaskExecutorSettings.of(config)
    assert (te.heartbeat_interval, te.heartbeat_timeout, te.overhead_mb) == (3.0, 60.0, 1024)
    jm = JobMasterSettings.of(config)
    assert jm.heartbeat_timeout == 60.0 and jm.restart.kind == "fixed-delay"
    assert ResourceManagerSettings.of(config).worker_overhead_mb == 1024


def test_a_sessions_job_gets_its_own_job_level_options_and_not_others():
    session = Configuration.load(overrides=["pipeline.batch-rows=1000", "heartbeat.timeout=60 s"])
    job = for_job(session, {"pipeline.batch-rows": "77",
                            "execution.batch.adaptive.auto-parallelism.max-parallelism": "9",
                            "heartbeat.timeout": "5 s"})          # not the job's to change
    own, other = JobMasterSettings.of(job), JobMasterSettings.of(session)
    assert (own.batch_rows, own.adaptive.parallelism.max_parallelism) == (77, 9)
    assert (other.batch_rows, other.adaptive.parallelism.max_parallelism) == (1000, 128)
    assert own.heartbeat_timeout == 60.0


def test_the_partition_store_is_resolved_once_for_the_job_and_the_attempt_fence():
    config = Configuration.load(overrides=["execution.batch.partition-store.dir=/data/parts"])
    storage = StorageSettings.of(config)
    assert storage.root == "file:///data/parts" and storage.store == "local"
    assert YarnApplicationSettings.of(config).storage == storage


def test_a_value_no_component_can_use_is_refused_in_one_line_naming_its_option():
    with pytest.raises(ConfigError) as refused:
        Configuration.load(overrides=["heartbeat.interval=soon"])
    message = str(refused.value)
    assert "heartbeat.interval" in message and "\n" not in message
