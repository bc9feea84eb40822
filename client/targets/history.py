"""Where finished session jobs are archived, seen from the client: the history
directory a session is started with, and reading it back (`yarnflow history`), during
the session or long after it stopped.

``hdfs://`` locations are read and written through WebHDFS (the NameNode's HTTP
address from the Hadoop configuration), so neither the client nor the
ApplicationMaster needs Hadoop's native client libraries.
"""
from __future__ import annotations

import getpass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from yarnflow.conf import Configuration, options
from yarnflow.client.targets.app_store import yarnflow_home
from yarnflow.core.hadoop_conf import HadoopConf, HadoopConfigError
from yarnflow.client.targets.kerberos import cluster_user
from yarnflow.core.ids import JobID

if TYPE_CHECKING:
    from yarnflow.core.details import JobDetails
    from yarnflow.core.history import JobArchive


def webhdfs_url(hdfs_url: str, hadoop: HadoopConf) -> str:
    """``hdfs://nn:9000/p`` (or ``hdfs:///p``) -> ``webhdfs://<dfs.namenode.http-address>/p``."""
    http = hadoop.namenode_http_address(urlparse(hdfs_url).netloc)
    return f"webhdfs://{http}{urlparse(hdfs_url).path}"


def history_location(config: Configuration) -> str:
    """The configured ``session.history-dir`` as a location both the
    ApplicationMaster and the client can open; by default the user's directory on
    the cluster's HDFS, or ``~/.yarnflow/history`` without one."""
    configured = config.get(options.SESSION_HISTORY_DIR)
    try:
        hadoop: HadoopConf | None = HadoopConf.load()
    except HadoopConfigError:
        hadoop = None
    default_fs = hadoop.get("fs.defaultFS") if hadoop else ""
    if not configured:
        if hadoop is not None and default_fs.startswith("hdfs://"):
            user = (cluster_user(config) if hadoop.kerberos else "") or getpass.getuser()
            return webhdfs_url(f"{default_fs}/user/{user}/.yarnflow/history", hadoop)
        return str(yarnflow_home() / "history")
    if configured.startswith("hdfs://"):
        if hadoop is None:
            raise HadoopConfigError(f"session.history-dir {configured} is on HDFS but no Hadoop "
                                    "configuration names the NameNode; export HADOOP_CONF_DIR")
        return webhdfs_url(configured, hadoop)
    return configured


def open_history(location: str) -> JobArchive:
    """The job history at ``location`` (fsspec is loaded only here: reading history is
    never on the submit path)."""
    from yarnflow.core.history import open_archive
    from yarnflow.rpc.codec import JOB_DETAILS
    return open_archive(location, JOB_DETAILS, kerberos_cluster())


def archived_job(location: str, job_id: JobID) -> JobDetails | None:
    """The job as archived at ``location``; None when it is not there or unreadable."""
    from yarnflow.core.history import archived_job as archived
    from yarnflow.rpc.codec import JOB_DETAILS
    return archived(location, job_id, JOB_DETAILS, kerberos_cluster())


def kerberos_cluster() -> bool:
    """Whether this client's cluster is Kerberos's: its WebHDFS then takes SPNEGO."""
    try:
        return HadoopConf.load().kerberos
    except HadoopConfigError:
        return False
