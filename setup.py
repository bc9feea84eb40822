"""The yarnflow distribution.

The repository's top level is fixed by the product (appmaster/, taskexecutor/,
client/, conf/, rpc/), but installing packages called ``client`` or ``conf`` into
site-packages would collide with other projects. So every directory is installed
under one ``yarnflow`` namespace: ``client/`` *is* the ``yarnflow`` package (what a
pipeline author imports), ``core/`` is the model both sides share
(``yarnflow.core``), and the runtime lives in ``yarnflow.appmaster``,
``yarnflow.taskexecutor``, ``yarnflow.conf`` and ``yarnflow.rpc``.
"""
from setuptools import setup

PACKAGES = {
    "yarnflow": "client",
    "yarnflow.targets": "client/targets",
    "yarnflow.planner": "client/planner",
    "yarnflow.core": "core",
    "yarnflow.core.fs": "core/fs",
    "yarnflow.conf": "conf",
    "yarnflow.rpc": "rpc",
    "yarnflow.rpc.generated": "rpc/generated",
    "yarnflow.rpc.gateways": "rpc/gateways",
    "yarnflow.appmaster": "appmaster",
    "yarnflow.appmaster.dispatcher": "appmaster/dispatcher",
    "yarnflow.appmaster.jobmaster": "appmaster/jobmaster",
    "yarnflow.appmaster.jobmaster.slotpool": "appmaster/jobmaster/slotpool",
    "yarnflow.appmaster.jobmaster.scheduler": "appmaster/jobmaster/scheduler",
    "yarnflow.appmaster.jobmaster.executiongraph": "appmaster/jobmaster/executiongraph",
    "yarnflow.appmaster.jobmaster.failover": "appmaster/jobmaster/failover",
    "yarnflow.appmaster.resourcemanager": "appmaster/resourcemanager",
    "yarnflow.appmaster.resourcemanager.slotmanager": "appmaster/resourcemanager/slotmanager",
    "yarnflow.appmaster.resourcemanager.drivers": "appmaster/resourcemanager/drivers",
    "yarnflow.appmaster.webmonitor": "appmaster/webmonitor",
    "yarnflow.taskexecutor": "taskexecutor",
    "yarnflow.taskexecutor.slot": "taskexecutor/slot",
    "yarnflow.taskexecutor.network": "taskexecutor/network",
    "yarnflow.core.operators": "core/operators",
}

setup(
    name="yarnflow",
    version="0.1.0",
    description="Flink's FLIP-6 runtime in Python for data pipelines on Hadoop YARN",
    python_requires=">=3.10",
    packages=list(PACKAGES),
    package_dir=PACKAGES,
    package_data={"yarnflow.conf": ["*.yaml"], "yarnflow.rpc": ["proto/*.proto"],
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
        "pandas>=2.2",
        "fsspec>=2024.2",     # the job history archive (WebHDFS on YARN)
        "requests>=2.31",     # fsspec's WebHDFS client
        "prometheus_client>=0.20",   # the web monitor's /metrics
    ],
    extras_require={
        "spark": ["pyspark>=4.0"],
        "yarn": ["skein>=0.8.2"],
        "test": ["pytest>=8", "pytest-timeout>=2.2", "grpcio-tools>=1.85.1", "skein>=0.8.2",
                 "mypy>=2.4,<2.5",
                 "pyspark>=4.0"],
    },
    entry_points={"console_scripts": ["yarnflow = yarnflow.cli:entry"]},
)
