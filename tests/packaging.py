"""The package layout as setup.py installs it, read from setup.py itself (its
``PRODUCT`` folders and ``packages()``), so the layering test, the type check and the
wheel test cannot keep a copy of the layout that drifts from what users install.

The layout is one rule (setup.py): ``yarnflow.<dotted path>`` is the file or folder at
``<path>`` from the repository root."""
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


def product() -> tuple[str, ...]:
    """The top-level folders that ship, each installed as ``yarnflow.<folder>``."""
    return tuple(_setup_module().PRODUCT)


def packages() -> list[str]:
    """Every installed package."""
    return list(_setup_module().packages(ROOT))


def folder_of(package: str) -> Path:
    """The one rule: a ``yarnflow.`` package's folder is its dotted path from the root."""
    assert package.startswith("yarnflow."), package
    return ROOT.joinpath(*package.split(".")[1:])


def source_modules() -> list[str]:
    """Every module of the source tree, by the name it is imported as once installed."""
    modules = []
    for package in packages():
        for path in sorted(folder_of(package).glob("*.py")):
            modules.append(package if path.stem == "__init__" else f"{package}.{path.stem}")
    return modules


def build_wheel(out: Path) -> Path:
    """``pip wheel .`` of the checkout, as a user installing from a package index gets
    it. Built from a copy of setup.py and the package folders: setuptools builds in
    ``build/``, where a module deleted from the source would live on into the wheel."""
    source = out / "source"
    source.mkdir()
    shutil.copy(ROOT / "setup.py", source)
    for folder in product():
        shutil.copytree(ROOT / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(out), str(source)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = list(out.glob("yarnflow-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]
