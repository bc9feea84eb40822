"""The job's file system settings, as the client decides them: the default file
system (``fs.default-scheme``; on YARN targets ``fs.defaultFS``, filled in by
``targets.yarn.prepare_config``; else the local disk) and how to reach HDFS's NameNode
over HTTP. They travel inside the job's sources and sinks, so the ApplicationMaster
and the executors open exactly the URIs the client checked."""
from __future__ import annotations

from urllib.parse import urlsplit

from yarnflow.conf import Configuration, options
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.fs.settings import LOCAL_FS
from yarnflow.targets.hadoop_conf import HadoopConf, HadoopConfigError


def use_cluster_filesystem(config: Configuration, hadoop: HadoopConf) -> None:
    """Paths without a scheme go to the cluster's fs.defaultFS, and HDFS is reached at
    its NameNode's HTTP address, unless the configuration already says otherwise."""
    if not config.get(options.FS_DEFAULT_SCHEME):
        config.set(options.FS_DEFAULT_SCHEME, hadoop.default_fs)
    if not config.get(options.FS_HDFS_HTTP_ADDRESS) and hadoop.default_fs.startswith("hdfs://"):
        config.set(options.FS_HDFS_HTTP_ADDRESS, hadoop.namenode_http_address())


def filesystem_settings(config: Configuration) -> FileSystemSettings:
    default_fs = config.get(options.FS_DEFAULT_SCHEME) or LOCAL_FS
    http = config.get(options.FS_HDFS_HTTP_ADDRESS)
    authority = urlsplit(default_fs).netloc if default_fs.startswith("hdfs://") else ""
    hadoop: HadoopConf | None = None
    if not http:
        try:
            hadoop = HadoopConf.load()      # a local job may still read hdfs:// paths
        except HadoopConfigError:
            hadoop = None
    addresses: list[tuple[str, str]] = []
    if http and authority:
        addresses.append((authority, http))
    elif hadoop is not None and hadoop.default_fs.startswith("hdfs://"):
        addresses.append((urlsplit(hadoop.default_fs).netloc, hadoop.namenode_http_address()))
    return FileSystemSettings(default_fs=default_fs, hdfs_http_addresses=tuple(addresses),
                              allow_local_paths=config.get(options.FS_ALLOW_LOCAL_PATHS))
