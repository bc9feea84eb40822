"""The shared parts of deployments this TaskExecutor was sent (``core/deployment.py``).

A JobMaster sends each part (a vertex's TaskInformation, an ALL_TO_ALL input's shuffle
descriptors) to an executor once and names it by key in every later deployment, so the
executor keeps them. A digest of its content names a part, so a kept one is never stale;
the cache is bounded, least recently used first out, and a deployment naming a part no
longer here is refused with ``MissingSharedParts``: its JobMaster sends it again whole.

Used by the gRPC threads that decode deployments, never by the main thread: reading an
offloaded part from the cluster file system happens there, once per part.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Iterable

from yarnflow.core.deployment import SharedPart, digest
from yarnflow.core.errors import MissingSharedParts
from yarnflow.core.fs import FileSystemSettings, open_filesystem

# Bytes of parts kept; the one being used stays, whatever its size.
DEFAULT_CAPACITY = 64 << 20
# Offloaded parts known by their file but not read yet.
_FILES_KEPT = 10_000


class SharedParts:
    def __init__(self, filesystem: FileSystemSettings,
                 capacity_bytes: int = DEFAULT_CAPACITY) -> None:
        self._filesystem = filesystem
        self._capacity = capacity_bytes
        self._lock = threading.Lock()
        self._load = threading.Lock()     # one offloaded part read at a time, each once
        self._parts: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._files: OrderedDict[str, str] = OrderedDict()

    def accept(self, parts: Iterable[SharedPart]) -> None:
        """Keep the parts a deployment carried."""
        for part in parts:
            if part.offloaded:
                with self._lock:
                    if part.key not in self._parts:
                        self._files[part.key] = part.offloaded
                        if len(self._files) > _FILES_KEPT:
                            self._files.popitem(last=False)
            else:
                self._put(part.key, part.data)

    def get(self, key: str) -> bytes:
        """A part's bytes; raises ``MissingSharedParts`` when it is not here."""
        data = self._kept(key)
        if data is not None:
            return data
        with self._load:
            data = self._kept(key)          # another thread may have read it meanwhile
            if data is not None:
                return data
            with self._lock:
                path = self._files.get(key)
            if path is None:
                raise MissingSharedParts(f"this TaskExecutor holds no deployment part {key[:12]}")
            data = self._read(path, key)
            self._put(key, data)
            with self._lock:
                self._files.pop(key, None)
            return data

    def _read(self, path: str, key: str) -> bytes:
        try:
            with open_filesystem(path, self._filesystem).open_input_stream(path) as stream:
                data: bytes = stream.read()
        except Exception as err:   # noqa: BLE001 - the JobMaster sends it inline instead
            raise MissingSharedParts(f"could not read the offloaded deployment part {path}: "
                                     f"{type(err).__name__}: {err}") from None
        if digest(data) != key:
            raise MissingSharedParts(f"the offloaded deployment part {path} does not hold "
                                     "what was written there")
        return data

    def _kept(self, key: str) -> bytes | None:
        with self._lock:
            data = self._parts.get(key)
            if data is not None:
                self._parts.move_to_end(key)
            return data

    def _put(self, key: str, data: bytes) -> None:
        with self._lock:
            if key in self._parts:
                self._parts.move_to_end(key)
                return
            self._parts[key] = data
            self._size += len(data)
            while self._size > self._capacity and len(self._parts) > 1:
                _, evicted = self._parts.popitem(last=False)
                self._size -= len(evicted)

    def __len__(self) -> int:
        with self._lock:
            return len(self._parts)
