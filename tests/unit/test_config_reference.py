"""The configuration reference and `yarnflow config`: both are made from conf/options.py,
so these check what they show, not that they list options by hand."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from yarnflow.client.cli import main
from yarnflow.conf import options, reference
from yarnflow.conf.options import REGISTRY


def test_every_value_shown_reads_back_as_itself():
    # a default the reference prints must be one a user can paste into yarnflow.yaml
    for option in REGISTRY.values():
        assert option.parse(reference.show(option, option.default)) == option.default, option.key


def test_the_reference_lists_every_user_option_and_no_test_option():
    page = reference.markdown()
    for option in REGISTRY.values():
        assert (f"| `{option.key}` |" in page) is not option.test_only, option.key
    assert "test." not in page.split("| Key |")[0]
    assert sum(1 for _ in reference.sections()) > 10


def test_types_name_what_a_value_may_be():
    assert reference.kind(options.FS_HDFS_AUTHENTICATION) == "one of simple, kerberos (or empty)"
    assert reference.kind(options.TARGET) == "one of local, yarn-per-job, yarn-session"
    assert reference.kind(options.HEARTBEAT_TIMEOUT) == "duration"
    assert reference.show(options.BROADCAST_THRESHOLD, 10 * 2**20) == "10 mb"
    assert reference.show(options.SLOT_REQUEST_TIMEOUT, 300.0) == "5 min"


def test_a_renamed_option_names_its_old_key_and_a_yarn_default_is_given():
    page = reference.markdown()
    row = next(line for line in page.splitlines() if "`jobmanager.memory.process.size`" in line)
    assert "Formerly `yarn.appmaster.memory`" in row
    row = next(line for line in page.splitlines() if "`jobmaster.upstream-failure.grace`" in line)
    assert "`2 s`; on YARN `10 s`" in row


def _config(*args: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(main, ["config", *args], env=env or {"YARNFLOW_CONF_DIR": ""})
    assert result.exit_code == 0, result.output
    return result.output


def _row(output: str, key: str) -> list[str]:
    return next(line.split() for line in output.splitlines() if line.startswith(key + " "))


def test_config_shows_each_value_and_what_set_it(tmp_path):
    conf = tmp_path / "yarnflow.yaml"
    conf.write_text("slot.idle.timeout: 2 min\nheartbeat.interval: 5 s\n")
    output = _config("-c", str(conf), "-D", "heartbeat.interval=3s", "-t", "yarn-session",
                     "slot.", "heartbeat.", "jobmaster.upstream-failure.grace", "parallelism.default")
    assert _row(output, "slot.idle.timeout") == ["slot.idle.timeout", "2", "min", str(conf)]
    assert _row(output, "heartbeat.interval") == ["heartbeat.interval", "3", "s", "-D"]
    assert _row(output, "slot.request.timeout") == ["slot.request.timeout", "5", "min", "default"]
    assert _row(output, "jobmaster.upstream-failure.grace")[1:] == ["10", "s", "target", "yarn-session"]
    assert "yarn.python" not in output


def test_config_on_local_keeps_the_default_and_lists_only_what_changed():
    output = _config("--changed", "-D", "parallelism.default=3")
    assert _row(output, "parallelism.default") == ["parallelism.default", "3", "-D"]
    assert "jobmaster.upstream-failure.grace" not in output and "heartbeat" not in output


def test_config_lists_no_test_option_and_refuses_an_unknown_key():
    assert "test.rpc.faults" not in _config()
    result = CliRunner().invoke(main, ["config", "slot.reqest"])
    assert result.exit_code == 2
    assert "did you mean 'slot.request.timeout'" in result.output


@pytest.mark.parametrize("flag", ["-l", "--long"])
def test_config_long_adds_type_default_and_description(flag):
    output = _config(flag, "slot.request.timeout")
    assert "duration" in output and "before failing the job" in output
