"""What the YARN benchmarks need to know of the cluster they run on.

On the native test cluster (`docker-hadoop/native/cluster up`) every host is this
machine and shares its interpreter, which ``yarn.python`` names. On a cluster of hosts
(``YARNFLOW_TEST_CLUSTER=given``: the dockerised cluster's edge host, where CI runs
the benchmarks) the client's environment is shipped, as for any user."""
from __future__ import annotations

import os
import sys


def python_options() -> list[str]:
    """``key=value`` options for the interpreter of the cluster's containers."""
    if os.environ.get("YARNFLOW_TEST_CLUSTER") == "given":
        return []
    return [f"yarn.python={sys.executable}"]


def python_args() -> list[str]:
    """The same as ``yarnflow run`` arguments (``-D key=value``)."""
    return [arg for option in python_options() for arg in ("-D", option)]


class ClusterScratch:
    """A fresh directory on the cluster's default file system (HDFS on the test
    clusters), where the executors of every host can write, removed on exit: the
    benchmarks' jobs write their outputs there, as a user's job does."""

    def __init__(self, name: str) -> None:
        import uuid
        from yarnflow.client.filesystems import filesystem_settings
        from yarnflow.core.hadoop_conf import HadoopConf
        from yarnflow.conf import Configuration
        from yarnflow.core.fs import open_filesystem
        default_fs = HadoopConf.load().default_fs.rstrip("/")
        settings = filesystem_settings(Configuration.load(overrides=[f"fs.default-scheme={default_fs}"]))
        self.uri = f"{default_fs}/tmp/yarnflow-bench/{name}-{uuid.uuid4().hex[:8]}"
        self.settings = settings
        self.fs = open_filesystem(self.uri, settings)

    def __enter__(self) -> "ClusterScratch":
        self.fs.mkdirs(self.uri)
        return self

    def __exit__(self, *exc: object) -> None:
        self.fs.delete(self.uri)
