from __future__ import annotations

import pytest

from yarnflow.conf import ConfigError, Configuration, options


def test_defaults_follow_flink_names_and_values():
    conf = Configuration.load()
    assert conf.get(options.TASKMANAGER_TIMEOUT) == 30.0
    assert conf.get(options.SLOT_REQUEST_TIMEOUT) == 300.0
    assert conf.get(options.SLOT_IDLE_TIMEOUT) == 50.0
    assert conf.get(options.HEARTBEAT_INTERVAL) == 10.0
    assert conf.get(options.HEARTBEAT_TIMEOUT) == 50.0


def test_dynamic_overrides_win_and_parse_units(tmp_path):
    file = tmp_path / "yarnflow.yaml"
    file.write_text("slot.request.timeout: 120 s\ntaskmanager.default-slot.memory: 2g\n")
    conf = Configuration.load(file, ["slot.request.timeout=500 ms"])
    assert conf.get(options.SLOT_REQUEST_TIMEOUT) == 0.5
    assert conf.get(options.DEFAULT_SLOT_MEMORY) == 2048


def test_unknown_key_is_refused_with_a_suggestion():
    with pytest.raises(ConfigError, match="unknown configuration option 'slot.request.timout'.*"
                                          "did you mean 'slot.request.timeout'"):
        Configuration.load(overrides=["slot.request.timout=5s"])


def test_bad_value_names_the_option():
    with pytest.raises(ConfigError, match="bad value for heartbeat.interval.*not a duration"):
        Configuration.load(overrides=["heartbeat.interval=soon"])


def test_a_choice_names_what_it_takes_and_may_stay_empty():
    config = Configuration.load(overrides=["fs.hdfs.authentication= Kerberos "])
    assert config.get(options.FS_HDFS_AUTHENTICATION) == "kerberos"
    assert Configuration.load().get(options.FS_HDFS_AUTHENTICATION) == ""
    with pytest.raises(ConfigError, match=r"'token' is not one of simple, kerberos \(or empty\)"):
        Configuration.load(overrides=["fs.hdfs.authentication=token"])


def test_shipped_json_round_trips_and_bad_files_name_the_problem(tmp_path):
    conf = Configuration.load(overrides=["slot.request.timeout=500 ms",
                                         "taskmanager.default-slot.memory=2g"])
    back = Configuration.from_json(conf.to_json())
    assert back.to_dict() == conf.to_dict()
    assert back.get(options.SLOT_REQUEST_TIMEOUT) == 0.5
    file = tmp_path / "executor.json"
    file.write_text(conf.to_json())
    assert Configuration.from_file(file).to_dict() == conf.to_dict()
    file.write_text("slot.request.timeout: 1 s")
    with pytest.raises(ConfigError, match="executor.json is not valid JSON"):
        Configuration.from_file(file)
    with pytest.raises(ConfigError, match="unknown configuration option 'slot.timeout'"):
        Configuration.from_json('{"slot.timeout": "1 s"}')


def test_a_taskexecutor_starts_without_a_yaml_parser():
    """Eight executors start at once on a node: each import is paid eight times over."""
    import subprocess
    import sys
    probe = ("import sys, yarnflow.taskexecutor.__main__, yarnflow.taskexecutor.yarn_container; "
             "print('yaml' in sys.modules, 'skein' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert out == ["False", "False"]


def test_a_heartbeat_timeout_not_above_the_interval_is_refused_naming_the_fix():
    with pytest.raises(ConfigError, match=r"heartbeat.timeout \(10 s\) must be above "
                                          r"heartbeat.interval \(10 s\).*Fix: raise"):
        Configuration.load(overrides=["heartbeat.interval=10 s", "heartbeat.timeout=10 s"])
    Configuration.load(overrides=["heartbeat.interval=10 s", "heartbeat.timeout=11 s"])
