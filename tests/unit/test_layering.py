"""Imports point one way: client -> model <- runtime. Checked from the source, so a
new import that crosses a boundary fails here rather than in a newcomer's head."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.packaging import roots

ROOT = Path(__file__).resolve().parents[2]

# folder -> the package it installs as, from setup.py (the one source of truth)
PACKAGES = roots()
RUNTIME = ("yarnflow.appmaster", "yarnflow.taskexecutor")
# The one seam through which the client starts the runtime in its own process.
LOCAL_SEAM = {"client/targets/local.py"}


def folder_of(module: str) -> str:
    """The top-level folder a ``yarnflow...`` module lives in."""
    for folder, package in sorted(PACKAGES.items(), key=lambda kv: -len(kv[1])):
        if module == package or module.startswith(package + "."):
            return folder
    return "client"


def imports(folder: str) -> list[tuple[str, str]]:
    """(file, imported yarnflow module) for every import in ``folder``, including the
    ones inside functions and TYPE_CHECKING blocks."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if "generated" in path.parts:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name == "yarnflow" or name.startswith("yarnflow."):
                    found.append((str(path.relative_to(ROOT)), name))
    return found


def test_the_boundary_check_sees_imports():
    """The checks below would pass vacuously if the walk found nothing."""
    assert ("client/pipeline.py", "yarnflow.core.jobgraph") in imports("client")
    assert folder_of("yarnflow.jobgraph") == "client"
    assert folder_of("yarnflow.core.jobgraph") == "core"


@pytest.mark.parametrize("folder", ["appmaster", "taskexecutor", "rpc", "conf"])
def test_the_runtime_never_imports_the_client(folder):
    crossing = [(f, m) for f, m in imports(folder) if folder_of(m) == "client"]
    assert not crossing, f"{folder}/ imports the client: {crossing}"


def test_the_model_imports_nothing_but_itself():
    crossing = [(f, m) for f, m in imports("core") if folder_of(m) != "core"]
    assert not crossing, f"core/ imports other yarnflow packages: {crossing}"


def test_the_client_reaches_the_runtime_only_through_the_local_target():
    crossing = [(f, m) for f, m in imports("client")
                if m.startswith(RUNTIME) and f not in LOCAL_SEAM]
    assert not crossing, f"the client imports the runtime outside the local target: {crossing}"


@pytest.mark.parametrize("folder", ["rpc", "conf"])
def test_the_wire_and_the_configuration_know_no_component(folder):
    crossing = [(f, m) for f, m in imports(folder) if m.startswith(RUNTIME)]
    assert not crossing, f"{folder}/ imports a runtime component: {crossing}"
