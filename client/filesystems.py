"""The job's file system settings, as the client decides them: the default file
system (``fs.default-scheme``; on YARN targets ``fs.defaultFS``, filled in by
``targets.yarn.prepare_config``; else the local disk) and how to reach HDFS's NameNode
over HTTP. They travel inside the job's sources and sinks, so the ApplicationMaster
and the executors open exactly the URIs the client checked."""
from __future__ import annotations

import dataclasses
from urllib.parse import urlsplit

from yarnflow.conf import Configuration, options
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.hadoop_conf import HadoopConf, HadoopConfigError
from yarnflow.client.targets.kerberos import cluster_user


def use_cluster_filesystem(config: Configuration, hadoop: HadoopConf) -> None:
    """Paths without a scheme go to the cluster's fs.defaultFS, and HDFS is reached at
    its NameNode's HTTP address, unless the configuration already says otherwise."""
    if not config.get(options.FS_DEFAULT_SCHEME):
        config.set(options.FS_DEFAULT_SCHEME, hadoop.default_fs)
    if not config.get(options.FS_HDFS_HTTP_ADDRESS) and hadoop.default_fs.startswith("hdfs://"):
        config.set(options.FS_HDFS_HTTP_ADDRESS, hadoop.namenode_http_address())
    if not config.get(options.FS_HDFS_AUTHENTICATION):
        config.set(options.FS_HDFS_AUTHENTICATION, "kerberos" if hadoop.kerberos else "simple")


def filesystem_settings(config: Configuration) -> FileSystemSettings:
    settings = with_kerberos_user(options.filesystem_settings(config), config)
    if settings.hdfs_http_addresses:
        return settings
    try:
        hadoop = HadoopConf.load()      # a local job may still read hdfs:// paths
    except HadoopConfigError:
        return settings
    if not hadoop.default_fs.startswith("hdfs://"):
        return settings
    return with_kerberos_user(dataclasses.replace(
        settings, hdfs_http_addresses=((urlsplit(hadoop.default_fs).netloc,
                                        hadoop.namenode_http_address()),),
        kerberos=settings.kerberos or hadoop.kerberos), config)


def with_kerberos_user(settings: FileSystemSettings, config: Configuration) -> FileSystemSettings:
    """On a Kerberos cluster the user is the login's principal (its short name), not
    this machine's account: a relative path and the user's caches go under
    ``/user/<name>``."""
    if not settings.kerberos or settings.user:
        return settings
    return dataclasses.replace(settings, user=cluster_user(config))
