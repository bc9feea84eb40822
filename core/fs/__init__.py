"""The file systems a job's data lives on, through one interface.

A path without a scheme resolves against the default file system (``fs.defaultFS`` on
a YARN target, the local disk on ``local``), as Hadoop's own tools do. Every process
that touches data (the client estimating inputs, the JobMaster cutting splits and
committing outputs, the TaskExecutors reading and writing) opens the same URI through
:func:`open_filesystem` with the job's :class:`FileSystemSettings`.
"""
from yarnflow.core.fs.filesystem import Block, FileSystem, hosts_of_range
from yarnflow.core.fs.opening import open_filesystem
from yarnflow.core.fs.settings import FileSystemSettings, LocalPathRefused, cluster_settings

__all__ = ["Block", "FileSystem", "FileSystemSettings", "LocalPathRefused", "cluster_settings",
           "hosts_of_range", "open_filesystem"]
