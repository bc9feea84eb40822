"""The package layout as setup.py installs it, read from setup.py itself (its
``package_dir()``), so the layering test, the type check and the wheel test cannot
keep a copy of the map that drifts from what users install."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


@cache
def _setup_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("yarnflow_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)   # setup() itself runs only as __main__
    return module


def roots() -> dict[str, str]:
    """Top-level folder -> the package it installs as."""
    return dict(_setup_module().ROOTS)


def package_dir() -> dict[str, str]:
    """Every installed package -> its folder."""
    return dict(_setup_module().package_dir(ROOT))


def source_modules() -> list[str]:
    """Every module of the source tree, by the name it is imported as once installed."""
    modules = []
    for package, folder in package_dir().items():
        for path in sorted((ROOT / folder).glob("*.py")):
            modules.append(package if path.stem == "__init__" else f"{package}.{path.stem}")
    return modules


def build_wheel(out: Path) -> Path:
    """``pip wheel .`` of the checkout, as a user installing from a package index gets
    it. Built from a copy of setup.py and the package folders: setuptools builds in
    ``build/``, where a module deleted from the source would live on into the wheel."""
    source = out / "source"
    source.mkdir()
    shutil.copy(ROOT / "setup.py", source)
    for folder in roots():
        shutil.copytree(ROOT / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(out), str(source)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = list(out.glob("yarnflow-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]
