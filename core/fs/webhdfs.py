"""HDFS through WebHDFS: the NameNode's REST API, then the DataNodes' for the bytes.

It needs no Hadoop client libraries on the user's machine, in the ApplicationMaster
or in the executors (pyarrow's HadoopFileSystem needs libhdfs and a JVM), and it
reaches a DataNode exactly as an HDFS client does: the NameNode redirects each read to
a host that stores the block. fsspec's WebHDFS does the HTTP; this adds what HDFS
clients get from the Java API: block locations, a rename that says when it failed,
files created without their parent, and an access check.
"""
from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs
import requests
from fsspec.implementations.webhdfs import WebHDFile, WebHDFS

from yarnflow.core.fs.filesystem import Block, FileSystem

# Bytes a writer buffers before it sends them to the DataNode (one HTTP request each).
WRITE_BUFFER = 8 << 20


class _StrictFile(WebHDFile):   # type: ignore[misc]   # fsspec is untyped
    """A file being written, created only in an existing directory, and created when
    opened (as HDFS's own clients do; fsspec waits for its first full buffer)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.offset = 0
        self._initiate_upload()

    def _initiate_upload(self) -> None:
        try:
            super()._initiate_upload()
        except requests.HTTPError as err:
            if err.response is not None and err.response.status_code == 404:
                raise FileNotFoundError(f"cannot create {self.path}: its directory does "
                                        "not exist") from None
            raise


class _WebHdfs(WebHDFS):   # type: ignore[misc]   # fsspec is untyped
    """fsspec's WebHDFS with files created strictly (``createparent=false``) and a
    rename that raises when HDFS answers ``false``."""

    def _open(self, path: str, mode: str = "rb", block_size: int | None = None,
              autocommit: bool = True, replication: int | None = None,
              permissions: int | None = None, **kwargs: Any) -> Any:
        if "r" in mode:
            # No read-ahead: pyarrow asks for exactly the ranges it needs (a row group's
            # column chunks, pre-buffered), and fsspec's default cache would fetch a
            # whole block more past each of them.
            return WebHDFile(self, path, mode=mode, block_size=block_size or self.blocksize,
                             tempdir=self.tempdir, autocommit=autocommit,
                             replication=replication, permissions=permissions,
                             cache_type="none")
        return _StrictFile(self, path, mode=mode, block_size=block_size or WRITE_BUFFER,
                         tempdir=self.tempdir, autocommit=autocommit, replication=replication,
                         permissions=permissions, createparent="false")

    def mv(self, path1: str, path2: str, **kwargs: Any) -> None:
        if self.exists(path2):
            raise FileExistsError(f"cannot rename {path1} to {path2}: {path2} exists")
        answer = self._call("RENAME", method="put", path=path1, destination=path2).json()
        if not answer.get("boolean"):
            if not self.exists(path1):
                raise FileNotFoundError(f"cannot rename {path1}: it does not exist")
            raise OSError(f"HDFS refused to rename {path1} to {path2} (does the parent of "
                          f"{path2} exist?)")


class WebHdfsFileSystem(FileSystem):
    def __init__(self, http_address: str, user: str, scheme: str = "hdfs",
                 authority: str = "") -> None:
        host, _, port = http_address.rpartition(":")
        self.webhdfs = _WebHdfs(host=host, port=int(port), user=user)
        super().__init__(pafs.PyFileSystem(pafs.FSSpecHandler(self.webhdfs)), scheme, authority)

    def block_locations(self, uri: str) -> list[Block]:
        reply = self.webhdfs._call("GETFILEBLOCKLOCATIONS", path=self.path(uri), offset=0,
                                   length=1 << 62).json()
        blocks = (reply.get("BlockLocations") or {}).get("BlockLocation") or []
        return [Block(b["offset"], b["length"], tuple(b.get("hosts") or ())) for b in blocks]

    def check_writable(self, uri: str) -> None:
        path = self.path(uri)
        while True:
            try:
                self.webhdfs._call("CHECKACCESS", path=path, fsaction="-w-")
                return
            except FileNotFoundError:
                if path in ("", "/"):
                    return
                path = path.rstrip("/").rsplit("/", 1)[0] or "/"
            except PermissionError as err:
                raise PermissionError(
                    f"{self.uri(path)} is not writable by {self.webhdfs.user}: "
                    f"{str(err).splitlines()[0]}") from None

    def rename(self, src: str, dst: str) -> None:
        self.webhdfs.mv(self.path(src), self.path(dst))

    def mkdirs_private(self, uri: str) -> None:
        self.mkdirs(uri)
        self.webhdfs.chmod(self.path(uri), "700")     # WebHDFS takes the octal digits

    def permission(self, uri: str) -> str:
        """The octal permission digits HDFS keeps for ``uri`` (e.g. "755")."""
        return str(self.webhdfs.info(self.path(uri)).get("permission", "0"))
