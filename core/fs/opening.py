"""Which file system a URI names, and one instance of it per process.

The factory lives apart from ``filesystem.py`` (the interface) and ``webhdfs.py`` (one
implementation of it), so that the implementation imports the interface and nothing
imports back: the schemes are known here, once.
"""
from __future__ import annotations

import threading
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from yarnflow.core.fs.filesystem import FileSystem, ObjectStoreFileSystem
from yarnflow.core.fs.settings import FileSystemSettings

_CACHE: dict[tuple[str, FileSystemSettings], FileSystem] = {}
_CACHE_LOCK = threading.Lock()


def open_filesystem(uri: str, settings: FileSystemSettings) -> FileSystem:
    """The file system holding ``uri`` (a full URI, see ``FileSystemSettings.resolve``);
    one instance per file system and settings in each process, so its connections
    are reused."""
    parts = urlsplit(uri)
    scheme = parts.scheme or "file"
    key = (f"{scheme}://{parts.netloc if scheme != 'file' else ''}", settings)
    with _CACHE_LOCK:
        fs = _CACHE.get(key)
        if fs is None:
            fs = _CACHE[key] = _create(scheme, parts.netloc, settings)
    return fs


def _create(scheme: str, authority: str, settings: FileSystemSettings) -> FileSystem:
    if scheme == "file":
        return FileSystem(pafs.LocalFileSystem(), "file")
    if scheme in ("hdfs", "webhdfs"):
        # imported on first use: fsspec's WebHDFS and requests cost every process that
        # never opens HDFS (a local run's client and executors) 65 ms at start
        from yarnflow.core.fs.webhdfs import WebHdfsFileSystem
        http = authority if scheme == "webhdfs" else settings.http_address(authority)
        return WebHdfsFileSystem(http, settings.effective_user, scheme, authority,
                                 kerberos=settings.kerberos)
    arrow, _ = pafs.FileSystem.from_uri(f"{scheme}://{authority}/")
    if scheme in ("s3", "gs", "gcs", "abfs", "az"):
        return ObjectStoreFileSystem(arrow, scheme)
    return FileSystem(arrow, scheme, authority)
