"""How Python reaches the nodes: what the containers run for each configuration, and
the launch check that fails in one line naming the host (run by a real bash)."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from yarnflow.conf import Configuration
from yarnflow.client.targets import environments
from yarnflow.client.targets.node_python import NodePython, interpreter_check, node_python, world_readable
from yarnflow.client.targets.yarn_errors import YarnError


def config(*overrides: str) -> Configuration:
    return Configuration.load(overrides=list(overrides))


def run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def test_a_preinstalled_interpreter_is_run_as_it_is_and_nothing_is_shipped():
    node = node_python(config(f"yarn.python={sys.executable}"))
    assert node.python == sys.executable and node.files == {}
    proc = run(node.script("platform"))
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr


def test_a_missing_interpreter_fails_in_one_line_naming_the_host_and_the_fix():
    node = node_python(config("yarn.python=/opt/nowhere/bin/python3"))
    proc = run(node.script("yarnflow.taskexecutor --yarn"))
    assert proc.returncode == 127
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"yarnflow: host {socket.gethostname()} ")
    assert "/opt/nowhere/bin/python3" in lines[0] and "Fix:" in lines[0]
    assert "No such file" not in proc.stderr


def test_the_check_quotes_what_it_prints():
    proc = run(NodePython("/nope", check=interpreter_check("/nope", "it's $(echo injected)")).script("x"))
    assert proc.returncode == 127 and "it's $(echo injected)" in proc.stderr


def test_without_a_virtual_environment_the_client_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    with pytest.raises(YarnError, match="not in a virtual environment.*yarn.python"):
        environments.virtualenv_prefix()


def test_a_missing_archive_is_named():
    with pytest.raises(YarnError, match="yarn.ship-environment /no/env.tar.gz does not exist"):
        node_python(config("yarn.ship-environment=/no/env.tar.gz"))


def test_an_archive_already_on_the_cluster_is_localized_from_there():
    node = node_python(config("yarn.ship-environment=hdfs://nn:9000/envs/etl.tar.gz"))
    assert node.python == "environment/bin/python"
    shipped = node.files["environment"]
    assert shipped.source == "hdfs://nn:9000/envs/etl.tar.gz" and shipped.type == "archive"


class PermissionsFs:
    """A file system that knows only permissions, as WebHDFS reports them."""

    def __init__(self, modes: dict[str, str]) -> None:
        self.modes = modes

    def path(self, uri: str) -> str:
        return uri.removeprefix("hdfs://nn")

    def uri(self, path: str) -> str:
        return f"hdfs://nn{path}"

    def permission(self, uri: str) -> str:
        return self.modes[self.path(uri)]


def test_the_public_cache_needs_every_folder_above_the_archive_open_to_all():
    modes = {"/user": "755", "/user/ann": "755", "/user/ann/envs": "755", "/user/ann/envs/e.tar.gz": "644"}
    fs = PermissionsFs(modes)
    assert world_readable(fs, "hdfs://nn/user/ann/envs/e.tar.gz")   # type: ignore[arg-type]
    assert not world_readable(PermissionsFs({**modes, "/user/ann": "700"}),   # type: ignore[arg-type]
                              "hdfs://nn/user/ann/envs/e.tar.gz")
    assert not world_readable(PermissionsFs({**modes, "/user/ann/envs/e.tar.gz": "640"}),   # type: ignore[arg-type]
                              "hdfs://nn/user/ann/envs/e.tar.gz")
