"""The job's file systems from Python and from ``yarnflow fs``: put data where a job on
the cluster reads it, list it, read back what a job wrote, remove it.

Paths resolve as a pipeline's do on a YARN target and as ``hadoop fs`` resolves them:
without a scheme, on ``fs.default-scheme`` or else ``fs.defaultFS`` of
``HADOOP_CONF_DIR`` (the local disk when there is neither); relative ones under
``/user/<user>`` on HDFS.
"""
from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from yarnflow.conf import Configuration
from yarnflow.core.fs import FileSystem, FileSystemSettings, open_filesystem
from yarnflow.client.filesystems import filesystem_settings, use_cluster_filesystem
from yarnflow.client.targets.hadoop_conf import HadoopConf, HadoopConfigError


def cluster_settings(config: Configuration | None = None) -> FileSystemSettings:
    """Settings whose default file system is the cluster's when there is one."""
    config = (config or Configuration.load()).copy()
    try:
        use_cluster_filesystem(config, HadoopConf.load())
    except HadoopConfigError:
        pass                                 # no cluster: the local disk
    return filesystem_settings(config)


def run_settings() -> FileSystemSettings:
    """Settings as the current ``yarnflow run`` resolves a pipeline's paths: the
    cluster's file system on a YARN target, the local disk on ``local``; outside a
    run (``yarnflow fs``, a plain script), the cluster's when there is one."""
    from yarnflow.client.context import current_context
    context = current_context()
    if context is None:
        return cluster_settings()
    if context.target.startswith("yarn"):
        return cluster_settings(context.config)
    return filesystem_settings(context.config)


def on_cluster() -> bool:
    """Whether the current run's paths without a scheme are on a cluster file system."""
    return not run_settings().default_is_local


def resolve(path: str | os.PathLike[str],
            settings: FileSystemSettings | None = None) -> tuple[FileSystem, str]:
    """The file system of ``path`` and its full URI (see ``run_settings``)."""
    settings = settings or run_settings()
    uri = settings.resolve(path)
    return open_filesystem(uri, settings), uri


def put(source: str | os.PathLike[str], destination: str | os.PathLike[str],
        overwrite: bool = False, settings: FileSystemSettings | None = None) -> str:
    """Copy a local file or directory tree to ``destination`` (its parents are
    made); returns the destination's URI. An existing destination is an error unless
    ``overwrite``."""
    fs, uri = resolve(destination, settings)
    local = os.path.abspath(source)
    if not os.path.exists(local):
        raise FileNotFoundError(f"{local} does not exist")
    if fs.exists(uri):
        if not overwrite:
            raise FileExistsError(f"{uri} exists. Fix: replace it (yarnflow fs put -f, or "
                                  "put(..., overwrite=True)) or remove it first")
        fs.delete(uri)
    parent = uri.rstrip("/").rsplit("/", 1)[0]
    fs.mkdirs(parent)
    pafs.copy_files(local, fs.path(uri), source_filesystem=pafs.LocalFileSystem(),
                    destination_filesystem=fs.arrow)
    return uri


def ls(path: str | os.PathLike[str], settings: FileSystemSettings | None = None
       ) -> list[tuple[str, int | None]]:
    """``(uri, size)`` of a file, of what a directory holds (size None for a
    directory), or of a glob's matching files."""
    fs, uri = resolve(path, settings)
    if not fs.is_dir(uri):
        return list(fs.list_files(uri))
    entries = fs.arrow.get_file_info(pafs.FileSelector(fs.path(uri)))
    return sorted((fs.uri(e.path), None if e.type == pafs.FileType.Directory else e.size)
                  for e in entries)


def rm(path: str | os.PathLike[str], settings: FileSystemSettings | None = None) -> str:
    fs, uri = resolve(path, settings)
    fs.delete(uri)
    return uri


def exists(path: str | os.PathLike[str], settings: FileSystemSettings | None = None) -> bool:
    fs, uri = resolve(path, settings)
    return fs.exists(uri)


def read_table(path: str | os.PathLike[str], settings: FileSystemSettings | None = None,
               **read_options: Any) -> pa.Table:
    """A Parquet file or directory (as a job writes it) as one Arrow table."""
    fs, uri = resolve(path, settings)
    return pq.read_table(fs.path(uri), filesystem=fs.arrow, **read_options)
