"""The yarnflow distribution.

One rule maps every import to its file: **the repository root is the ``yarnflow``
package**, so ``yarnflow.<folder>.<module>`` is ``<folder>/<module>.py`` and
``yarnflow.appmaster.jobmaster.slotpool`` is ``appmaster/jobmaster/slotpool/``. A
reader, an editor or an import-graph tool that knows that one line follows every
import without a table (tests/unit/test_layering.py checks that it does).

Why the root, and why a namespace package:

- The card fixes the top level (``appmaster/``, ``taskexecutor/``, ``client/``,
  ``conf/``, ...), and installing packages called ``client`` or ``conf`` into
  site-packages would collide with other projects, so the folders go under one name.
- ``yarnflow`` itself is an implicit namespace package (PEP 420): it has no
  ``__init__.py``, so importing ``yarnflow.taskexecutor`` in a TaskExecutor runs no
  code but the TaskExecutor's, and no process imports the client's pipeline API
  unless it asks for ``yarnflow.client``. (The repository root cannot hold an
  ``__init__.py`` either: pytest would then name the tests after the checkout's
  directory.)
- Pipeline authors import ``yarnflow.client`` (``import yarnflow.client as yf``).

``PRODUCT`` below names the folders that ship; every package under them is found by
discovery (a folder with an ``__init__.py``), so a new subpackage cannot be left out
of the wheel: a hand-kept list of 23 folders once dropped ``taskexecutor/spark`` and
broke every ``pip install .``. The tests read ``PRODUCT`` and ``packages()`` from
this file (tests/packaging.py), and tests/integration/test_wheel.py installs the
built wheel into a fresh virtual environment and imports every module from it.
"""
from __future__ import annotations

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent

# the top-level folders that ship, each installed as yarnflow.<folder>
PRODUCT = ("appmaster", "taskexecutor", "client", "conf", "core", "rpc")


def packages(root: Path = HERE) -> list[str]:
    """Every installed package: ``yarnflow.`` + its folder's path, dots for slashes."""
    found = []
    for folder in PRODUCT:
        found.append(f"yarnflow.{folder}")
        found += [f"yarnflow.{folder}.{sub}" for sub in find_packages(where=str(root / folder))]
    return found


if __name__ == "__main__":   # pip runs this file as __main__; tests import package_dir()
    setup(
        name="yarnflow",
        version="0.1.0",
        description="Flink's FLIP-6 runtime in Python for data pipelines on Hadoop YARN",
        python_requires=">=3.10",
        packages=packages(),
        package_dir={"yarnflow": "."},      # the one rule; see the top of this file
        package_data={**{f"yarnflow.{folder}": ["py.typed"] for folder in PRODUCT},
                      "yarnflow.conf": ["*.yaml"],
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
            # read_kafka / write_kafka (librdkafka wheels)
            "kafka": ["confluent-kafka>=2.4"],
            # venv-pack: the client's environment, shipped to the nodes (targets/environments.py)
            "yarn": ["skein>=0.8.2", "venv-pack>=0.2"],
            # SPNEGO to WebHDFS on a Kerberos cluster (core/fs/webhdfs.py); gssapi builds
            # against the system's Kerberos (Debian: libkrb5-dev)
            "kerberos": ["requests-gssapi>=1.2"],
            # TPC-H tables for examples/tpch (data.py)
            "tpch": ["tpchgen-cli>=2.0"],
            # the documentation site (docs/mkdocs.yml)
            "docs": ["mkdocs>=1.6,<2", "mkdocstrings[python]>=0.30"],
            "test": ["pytest>=8", "pytest-timeout>=2.2", "pytest-xdist>=3.5", "grpcio-tools>=1.85.1", "skein>=0.8.2",
                     "venv-pack>=0.2",
                     "mypy>=2.4,<2.5", "ruff>=0.17,<0.18",
                     "pyspark>=4.0", "confluent-kafka>=2.4",
                     # TPC-H's tables, and DuckDB's answers to check the queries against
                     "tpchgen-cli>=2.0", "duckdb>=1.1",
                     # the documentation's build, with warnings as errors (tests/unit/test_docs.py)
                     "mkdocs>=1.6,<2", "mkdocstrings[python]>=0.30"],
        },
        entry_points={"console_scripts": ["yarnflow = yarnflow.client.cli:entry"]},
    )
