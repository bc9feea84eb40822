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
