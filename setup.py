"""The yarnflow distribution.

The repository's top level is fixed by the product (appmaster/, taskexecutor/,
client/, conf/, rpc/), but installing packages called ``client`` or ``conf`` into
site-packages would collide with other projects. So every top-level folder is
installed under one ``yarnflow`` namespace: ``client/`` *is* the ``yarnflow`` package
(what a pipeline author imports), ``core/`` is the model both sides share
(``yarnflow.core``), and the runtime lives in ``yarnflow.appmaster``,
``yarnflow.taskexecutor``, ``yarnflow.conf`` and ``yarnflow.rpc``.

Only those top-level folders are named here. Every package below them is found by
discovery (a folder with an ``__init__.py``), so a new subpackage cannot be left out
of the wheel: a hand-kept list of 23 folders once dropped ``taskexecutor/spark`` and
broke every ``pip install .``. The tests read the layout from ``package_dir()``
(tests/packaging.py), and tests/integration/test_wheel.py installs the built wheel
into a fresh virtual environment and imports every module of the tree from it.
"""
from __future__ import annotations

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent

# top-level folder -> the package it installs as; the card fixes these folders
ROOTS = {
    "client": "yarnflow",
    "core": "yarnflow.core",
    "conf": "yarnflow.conf",
    "rpc": "yarnflow.rpc",
    "appmaster": "yarnflow.appmaster",
    "taskexecutor": "yarnflow.taskexecutor",
}


def package_dir(root: Path = HERE) -> dict[str, str]:
    """Every installed package -> its folder, relative to ``root``."""
    packages = {}
    for folder, package in ROOTS.items():
        packages[package] = folder
        for sub in find_packages(where=str(root / folder)):
            packages[f"{package}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    return packages


if __name__ == "__main__":   # pip runs this file as __main__; tests import package_dir()
    PACKAGES = package_dir()
    setup(
        name="yarnflow",
        version="0.1.0",
        description="Flink's FLIP-6 runtime in Python for data pipelines on Hadoop YARN",
        python_requires=">=3.10",
        packages=list(PACKAGES),
        package_dir=PACKAGES,
        package_data={"yarnflow": ["py.typed"], "yarnflow.conf": ["*.yaml"],
                      "yarnflow.rpc": ["proto/*.proto"],
                      "yarnflow.appmaster.webmonitor": ["static/*"]},
        install_requires=[
            "pyarrow>=15",
            "grpcio>=1.85.1",
            "protobuf>=7.35,<8",
            "cloudpickle>=2.0",
            "click>=8.0",
            "rich>=13.0",
            "pyyaml>=6.0",
            "cryptography>=41",
            "psutil>=5.9",
            "numpy>=1.26",
            # PySpark 4.3 supports pandas 2 only: with pandas 3 it warns on every first run
            "pandas>=2.2,<3",
            "fsspec>=2024.2",     # the job history archive (WebHDFS on YARN)
            "requests>=2.31",     # fsspec's WebHDFS client
            "prometheus_client>=0.20",   # the web monitor's /metrics
        ],
        extras_require={
            "spark": ["pyspark>=4.0"],
            # venv-pack: the client's environment, shipped to the nodes (targets/environments.py)
            "yarn": ["skein>=0.8.2", "venv-pack>=0.2"],
            "test": ["pytest>=8", "pytest-timeout>=2.2", "grpcio-tools>=1.85.1", "skein>=0.8.2",
                     "venv-pack>=0.2",
                     "mypy>=2.4,<2.5", "ruff>=0.17,<0.18",
                     "pyspark>=4.0"],
        },
        entry_points={"console_scripts": ["yarnflow = yarnflow.cli:entry"]},
    )
