"""One interface over the file systems jobs use: ``pyarrow.fs`` for the local disk and
object stores, fsspec's WebHDFS (extended in ``webhdfs.py``) for HDFS.

What yarnflow needs beyond plain reads and writes, every implementation gives:

- ``block_locations``: the hosts that store each block, so a split can be read on a
  host that holds it (HDFS; other file systems report none);
- ``rename`` that never replaces and never moves *into* an existing directory (HDFS's
  own rename does the latter and reports failure as ``false``, not as an error);
- ``open_output`` that never creates parent directories, so a task that outlives its
  job's abort cannot bring the discarded staging directory back.
"""
from __future__ import annotations

import contextlib
import fnmatch
import os
import posixpath
import uuid
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import urlsplit

import pyarrow.fs as pafs



@dataclass(frozen=True)
class Block:
    offset: int
    length: int
    hosts: tuple[str, ...]


def hosts_of_range(blocks: list[Block], start: int, length: int) -> tuple[str, ...]:
    """The hosts of the block holding most of ``[start, start + length)``: where
    reading that range is (mostly) local."""
    best: tuple[str, ...] = ()
    best_overlap = 0
    end = start + max(length, 1)
    for block in blocks:
        overlap = min(end, block.offset + block.length) - max(start, block.offset)
        if overlap > best_overlap:
            best, best_overlap = block.hosts, overlap
    return best


class FileSystem:
    """One file system (``file``, ``hdfs://nn:9000``, ``s3``); methods take full URIs on it."""

    #: object stores name a bucket where others name a host: ``s3://bucket/key``
    bucketed = False

    def __init__(self, arrow: pafs.FileSystem, scheme: str, authority: str = "") -> None:
        self.arrow = arrow
        self.scheme = scheme
        self.authority = authority

    # --- names ------------------------------------------------------------------------
    def path(self, uri: str) -> str:
        """The file system's own path of ``uri``."""
        parts = urlsplit(uri)
        if self.bucketed:
            return f"{parts.netloc}{parts.path}".rstrip("/")
        return parts.path or "/"

    def uri(self, path: str) -> str:
        if self.bucketed:
            return f"{self.scheme}://{path}"
        return f"{self.scheme}://{self.authority}{path}"

    # --- metadata ----------------------------------------------------------------------
    def info(self, uri: str) -> pafs.FileInfo:
        return self.arrow.get_file_info(self.path(uri))

    def exists(self, uri: str) -> bool:
        return bool(self.info(uri).type != pafs.FileType.NotFound)

    def modified(self, uri: str) -> float | None:
        """When ``uri`` was last written, in seconds since the epoch as the file system
        stamped it (its clock, not this host's: times read from one file system compare
        across hosts); None when it does not exist."""
        info = self.info(uri)
        if info.type == pafs.FileType.NotFound or info.mtime is None:
            return None
        return float(info.mtime.timestamp())

    def is_dir(self, uri: str) -> bool:
        return bool(self.info(uri).type == pafs.FileType.Directory)

    def list_files(self, uri: str, suffix: str = "") -> list[tuple[str, int]]:
        """``(uri, size)`` of the files a path names: the file itself; a directory's
        files ending in ``suffix`` (hidden ones, starting with ``.`` or ``_`` as Hadoop
        writes them, left out); or a glob's matches in its directory. Sorted by name."""
        path = self.path(uri)
        if any(ch in path for ch in "*?["):
            directory, pattern = posixpath.split(path)
            entries = self.arrow.get_file_info(pafs.FileSelector(directory))
            return sorted((self.uri(e.path), e.size or 0) for e in entries
                          if e.type == pafs.FileType.File
                          and fnmatch.fnmatch(posixpath.basename(e.path), pattern))
        info = self.arrow.get_file_info(path)
        if info.type == pafs.FileType.File:
            return [(uri, info.size or 0)]
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"{uri} does not exist")
        entries = self.arrow.get_file_info(pafs.FileSelector(path))
        return sorted((self.uri(e.path), e.size or 0) for e in entries
                      if e.type == pafs.FileType.File and e.path.endswith(suffix)
                      and not posixpath.basename(e.path).startswith((".", "_")))

    def list_tree(self, uri: str, suffix: str = "") -> list[tuple[str, int]]:
        """As ``list_files``, but a directory's files at any depth (partition
        directories), none under a hidden directory (``_temporary``, ``.staging``)."""
        path = self.path(uri)
        if any(ch in path for ch in "*?[") or \
                self.arrow.get_file_info(path).type != pafs.FileType.Directory:
            return self.list_files(uri, suffix)
        root = path.rstrip("/")
        entries = self.arrow.get_file_info(pafs.FileSelector(root, recursive=True))
        return sorted((self.uri(e.path), e.size or 0) for e in entries
                      if e.type == pafs.FileType.File and e.path.endswith(suffix)
                      and not any(part.startswith((".", "_")) for part in
                                  posixpath.relpath(e.path, root).split("/")))

    def list_dir(self, uri: str) -> list[str]:
        """Names (not paths) in a directory; none when it does not exist."""
        try:
            entries = self.arrow.get_file_info(pafs.FileSelector(self.path(uri)))
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(e.path.rstrip("/")) for e in entries)

    def block_locations(self, uri: str) -> list[Block]:
        return []

    def check_writable(self, uri: str) -> bool:
        """Raise PermissionError when this user could not create ``uri`` (checked on its
        nearest existing ancestor). Only file systems with permissions check anything.
        True when ``uri`` itself exists: the check learns it on the way, and a client
        that must refuse an existing output need not ask again."""
        return self.exists(uri)

    # --- data --------------------------------------------------------------------------
    def open_input(self, uri: str) -> Any:
        return self.arrow.open_input_file(self.path(uri))

    def open_input_stream(self, uri: str) -> Any:
        return self.arrow.open_input_stream(self.path(uri))

    def open_output(self, uri: str) -> Any:
        """A new file; its directory must exist."""
        return self.arrow.open_output_stream(self.path(uri))

    # --- changes -----------------------------------------------------------------------
    def mkdirs(self, uri: str) -> None:
        self.arrow.create_dir(self.path(uri), recursive=True)

    def write_whole(self, uri: str, data: bytes | Iterable[bytes]) -> bool:
        """Write a new file whole or not at all: under a hidden name beside ``uri``, then
        renamed, so no reader sees half of it. False, and nothing left behind, when
        ``uri`` exists already (another writer of the same name was first)."""
        directory, name = uri.rsplit("/", 1)
        partial = f"{directory}/.{name}.{uuid.uuid4().hex[:8]}"
        try:
            with self.open_output(partial) as out:
                for chunk in [data] if isinstance(data, bytes) else data:
                    out.write(chunk)
            self.rename(partial, uri)
        except FileExistsError:
            self.delete(partial)
            return False
        except BaseException:
            with contextlib.suppress(Exception):   # the write's own error is the one to see
                self.delete(partial)
            raise
        return True

    def mkdirs_private(self, uri: str) -> None:
        """A directory only its owner may enter (a job's data no other user of a shared
        cluster should read); file systems without permissions just make it."""
        self.mkdirs(uri)
        if self.scheme == "file":
            os.chmod(self.path(uri), 0o700)

    def delete(self, uri: str) -> None:
        """Remove a file or a whole directory; nothing if it is not there."""
        info = self.info(uri)
        if info.type == pafs.FileType.Directory:
            self.arrow.delete_dir(self.path(uri))
        elif info.type != pafs.FileType.NotFound:
            self.arrow.delete_file(self.path(uri))

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to the name ``dst``, which must not exist."""
        if self.exists(dst):
            raise FileExistsError(f"cannot rename {src} to {dst}: {dst} exists")
        if not self.exists(src):
            raise FileNotFoundError(f"cannot rename {src}: it does not exist")
        self.arrow.move(self.path(src), self.path(dst))


class ObjectStoreFileSystem(FileSystem):
    """S3 and the like: no directories, so a directory rename moves every object (one
    step at a time, not atomically)."""
    bucketed = True

    def rename(self, src: str, dst: str) -> None:
        taken = self.list_dir(dst) if self.is_dir(dst) else self.exists(dst)
        if taken:
            raise FileExistsError(f"cannot rename {src} to {dst}: {dst} exists")
        if not self.is_dir(src):
            super().rename(src, dst)
            return
        src_path, dst_path = self.path(src), self.path(dst)
        for entry in self.arrow.get_file_info(pafs.FileSelector(src_path, recursive=True)):
            if entry.type == pafs.FileType.File:
                self.arrow.move(entry.path, dst_path + entry.path[len(src_path):])
        self.arrow.delete_dir(src_path)
