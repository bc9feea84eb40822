"""What file sources and sinks share: the paths a user wrote, resolved once by the
client into URIs on a file system (see ``yarnflow.core.fs``), and the errors a user
can cause with them, each naming the path and the fix."""
from __future__ import annotations

import os
from typing import Any

from yarnflow.core.fs import FileSystem, FileSystemSettings, open_filesystem


class DataPathError(ValueError):
    """A pipeline's input or output path cannot be used as given (missing input,
    existing output, unwritable directory, unreachable file system)."""


class BoundPaths:
    """Paths as the user wrote them, and their URIs once bound to the job's settings.
    Unbound (a pipeline never planned), they resolve on this machine's disk."""

    def __init__(self, paths: str | os.PathLike[str] | list[Any]) -> None:
        self.paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        self.settings = FileSystemSettings()
        self.uris: list[str] = []

    def bound(self, settings: FileSystemSettings, role: str) -> "BoundPaths":
        """These paths resolved against ``settings``, as a new object: binding never
        changes the pipeline a user built, so planning it twice with two
        configurations gives two independent plans."""
        bound = BoundPaths(self.paths)
        bound.settings = settings
        bound.uris = [settings.resolve(p) for p in self.paths]
        for uri in bound.uris:
            settings.check_reachable(uri, role)
        return bound

    def resolved(self) -> list[str]:
        return self.uris or [self.settings.resolve(p) for p in self.paths]

    def filesystem(self, uri: str) -> FileSystem:
        return open_filesystem(uri, self.settings)


def unreachable(uri: str, err: Exception) -> DataPathError:
    """``err`` (an I/O failure, most often a connection refused) as the one line a user
    needs."""
    return DataPathError(
        f"the file system of {uri} did not answer ({type(err).__name__}: "
        f"{str(err).splitlines()[0][:200]}). Fix: start it, or point fs.default-scheme / "
        "HADOOP_CONF_DIR at the right one")
