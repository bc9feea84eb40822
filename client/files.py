"""The job's file systems from Python and from ``yarnflow fs``: put data where a job on
the cluster reads it, list it, read back what a job wrote, remove it.

Paths resolve as a pipeline's do on a YARN target and as ``hadoop fs`` resolves them:
without a scheme, on ``fs.default-scheme`` or else ``fs.defaultFS`` of
``HADOOP_CONF_DIR`` (the local disk when there is neither); relative ones under
``/user/<user>`` on HDFS.
"""
from __future__ import annotations

import os
import shutil
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from yarnflow.conf import Configuration
from yarnflow.core.fs import FileSystem, FileSystemSettings, open_filesystem
from yarnflow.client.filesystems import filesystem_settings, use_cluster_filesystem
from yarnflow.core.hadoop_conf import HadoopConf, HadoopConfigError

# Bytes a put reads of a local file at a time.
COPY_CHUNK = 8 << 20


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
    """Copy a local file or directory tree to ``destination``, whose missing parents
    are made; returns the destination's URI. An existing destination is an error
    unless ``overwrite``. As ``hadoop fs -put`` writes ``._COPYING_`` files, the copy
    goes to a hidden name beside the destination and takes its name only once whole:
    a put that fails half-way leaves nothing behind, not even the parents it made."""
    fs, uri = resolve(destination, settings)
    local = os.path.abspath(source)
    if not os.path.exists(local):
        raise FileNotFoundError(f"{local} does not exist")
    if fs.exists(uri) and not overwrite:
        raise FileExistsError(f"{uri} exists. Fix: replace it (yarnflow fs put -f, or "
                              "put(..., overwrite=True)) or remove it first")
    parent, base = uri.rstrip("/").rsplit("/", 1)
    made = _make_parents(fs, parent)
    copying = f"{parent}/.{base}.yarnflow-put-{uuid.uuid4().hex[:8]}"
    try:
        _copy(local, fs, copying)
        if overwrite:
            fs.delete(uri)
        fs.rename(copying, uri)
    except BaseException as err:
        for leftover in (copying, made):
            if leftover:
                try:
                    fs.delete(leftover)
                except OSError:
                    pass         # the failure being raised says what went wrong
        if isinstance(err, OSError):
            raise OSError(f"put {local} to {uri} failed: {_reason(err)}; nothing was left "
                          "there") from None
        raise
    return uri


def _make_parents(fs: FileSystem, directory: str) -> str | None:
    """Make ``directory`` and its missing parents; the topmost one made (None: none)."""
    missing = None
    probe = directory
    while not fs.exists(probe):
        missing = probe
        up = probe.rsplit("/", 1)[0]
        if up == probe or up.endswith(":/") or up.endswith(":"):
            break
        probe = up
    if missing is None and not fs.is_dir(directory):
        raise NotADirectoryError(f"{directory} is a file, not a directory. Fix: put it "
                                 "somewhere else, or remove that file")
    if missing is not None:
        fs.mkdirs(directory)
    return missing


def _copy(local: str, fs: FileSystem, target: str) -> None:
    """A local file or tree to ``target``, directories first, in name order."""
    if not os.path.isdir(local):
        _copy_file(local, fs, target)
        return
    fs.mkdirs(target)
    for root, dirs, files in os.walk(local):
        dirs.sort()
        relative = os.path.relpath(root, local)
        here = target if relative == "." else f"{target}/{relative.replace(os.sep, '/')}"
        for name in dirs:
            fs.mkdirs(f"{here}/{name}")
        for name in sorted(files):
            _copy_file(os.path.join(root, name), fs, f"{here}/{name}")


def _copy_file(local: str, fs: FileSystem, target: str) -> None:
    try:
        source = open(local, "rb")
    except OSError as err:
        raise OSError(f"cannot read {local}: {_reason(err)}") from None
    with source, fs.open_output(target) as out:
        shutil.copyfileobj(source, out, COPY_CHUNK)


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


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
