"""Packing the client's virtual environment for the nodes (environments.pack), on a
real venv with a project installed with ``pip install -e``: the archive holds the
project as its wheel installs it, nothing that points back at the checkout, and a
``bin/python`` that runs the nodes' interpreter; the unpacked archive imports the
project from itself; the same environment packs to the same archive, at once."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import venv
from pathlib import Path

from yarnflow.client.targets import environments

PROJECT = """
from setuptools import setup
setup(name="demo-project", version="1.0", packages=["demo_project"])
"""


def interpreter(tar: tarfile.TarFile) -> str:
    """Where the archive's bin/python leads: its links by name end at an absolute one."""
    member = tar.getmember("bin/python")
    while member.issym() and not member.linkname.startswith("/"):
        member = tar.getmember(f"bin/{member.linkname}")
    assert member.issym(), "bin/python is a copy, not a link to the nodes' interpreter"
    return member.linkname


def make_venv_with_an_editable_project(tmp_path: Path) -> tuple[Path, Path]:
    env, source = tmp_path / "venv", tmp_path / "checkout"
    (source / "demo_project").mkdir(parents=True)
    (source / "setup.py").write_text(PROJECT)
    (source / "demo_project" / "__init__.py").write_text("ANSWER = 42\n")
    venv.create(env, with_pip=True, symlinks=True)   # as `python -m venv` makes it
    proc = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", "-e", str(source)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return env, source


def test_an_editable_project_is_packed_as_its_wheel_and_runs_from_the_archive(tmp_path):
    env, source = make_venv_with_an_editable_project(tmp_path)
    version = environments.python_version(env)
    assert [e.name for e in environments.editable_projects(env)] == ["demo-project"]

    archive = environments.pack(env, sys.base_prefix, tmp_path / "cache")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        python = interpreter(tar)
        cfg = tar.extractfile("pyvenv.cfg").read().decode()   # type: ignore[union-attr]
        texts = [tar.extractfile(m).read().decode(errors="replace")   # type: ignore[union-attr]
                 for m in tar.getmembers()
                 if m.isfile() and (m.name.endswith(".pth") or "demo_project" in m.name)]
    site = f"lib/python{version}/site-packages"
    assert f"{site}/demo_project/__init__.py" in names
    assert not [n for n in names if "__editable__" in n]
    assert not [t for t in texts if str(source) in t], "the archive points back at the checkout"
    assert python == f"{sys.base_prefix}/bin/python{version}"
    assert f"home = {sys.base_prefix}/bin" in cfg.splitlines()

    unpacked = tmp_path / "container" / "environment"
    unpacked.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked)
    source.rename(tmp_path / "checkout-gone")       # as on a node: no checkout there
    proc = subprocess.run([str(unpacked / "bin" / "python"), "-c",
                           "import demo_project; print(demo_project.ANSWER, demo_project.__file__)"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path / "container",
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr
    answer, where = proc.stdout.split()
    assert answer == "42" and where.startswith(str(unpacked)), proc.stdout
    (tmp_path / "checkout-gone").rename(source)

    again = environments.pack(env, sys.base_prefix, tmp_path / "cache")
    assert again == archive and again.stat().st_mtime_ns == archive.stat().st_mtime_ns
    other_nodes = environments.pack(env, "/usr", tmp_path / "cache")
    assert other_nodes != archive
    with tarfile.open(other_nodes) as tar:
        assert interpreter(tar) == f"/usr/bin/python{version}"
