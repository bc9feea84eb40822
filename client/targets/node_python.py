"""How Python reaches the nodes: the interpreter YARN's containers run, the files
YARN localizes for it, and a launch check that fails in one line naming the host
instead of "No such file".

Three ways, in the order the configuration is read:
- ``yarn.python``: an interpreter installed on every node (nothing is shipped);
- ``yarn.ship-environment`` naming an archive (venv-pack or conda-pack);
- the default: the client's own virtual environment, packed (``environments.pack``).
  Flink ships its distribution with every application in the same spirit: the
  cluster need not have anything installed for yarnflow.

A shipped archive is uploaded once to the cluster's file system under a name
derived from its content (``yarn.environment-cache-dir``), and localized with PUBLIC
visibility where the path allows it: a node downloads it once for every container
and application that uses it, not once per container. Where it does not (a user's
home on a secure cluster is the user's alone), PRIVATE: a node downloads it once per
user, as Spark's archives are, not once per application (hundreds of MB each time).
"""
from __future__ import annotations

import getpass
import hashlib
import posixpath
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yarnflow.conf import Configuration, options
from yarnflow.core.fs import FileSystem, open_filesystem
from yarnflow.client.filesystems import filesystem_settings
from yarnflow.client.targets import environments
from yarnflow.client.targets.app_store import yarnflow_home
from yarnflow.client.targets.yarn_errors import YarnError

ENVIRONMENT = "environment"     # where YARN unpacks a shipped archive in a container


@dataclass(frozen=True)
class NodePython:
    python: str                                   # what the container's script runs
    files: dict[str, Any] = field(default_factory=dict)   # skein.File by name
    check: str = ""                               # shell lines run before it

    def script(self, module_and_args: str) -> str:
        """A container's launch script: the check, then ``exec python -m ...``."""
        run = f"exec {self.python} -m {module_and_args}"
        return f"{self.check}\n{run}" if self.check else run


def node_python(config: Configuration) -> NodePython:
    """What the ApplicationMaster and the TaskExecutors run. ``config`` has been
    through ``prepare_config`` (the cluster's file system is its default)."""
    preinstalled = config.get(options.YARN_PYTHON)
    if preinstalled:
        return NodePython(preinstalled, check=interpreter_check(
            preinstalled, f"yarn.python is {preinstalled}, which this host does not have. Fix: "
            "install it on every node or unset yarn.python to ship the client's environment"))
    packed = config.get(options.YARN_SHIP_ENVIRONMENT)
    if "://" in packed:            # already on the cluster: localized from there as it is
        uri, visibility = packed, "private"
        what = f"yarn.ship-environment {packed}"
    else:
        if packed:
            if not Path(packed).exists():
                raise YarnError(f"yarn.ship-environment {packed} does not exist. Fix: pack the "
                                "environment first, e.g. `venv-pack -o env.tar.gz`")
            archive = Path(packed)
            what = f"yarn.ship-environment {packed}"
        else:
            prefix = environments.virtualenv_prefix()
            node_prefix = config.get(options.YARN_ENVIRONMENT_PYTHON_PREFIX)
            archive = environments.pack(prefix, node_prefix, yarnflow_home() / "environments")
            what = (f"the client's environment, whose python is {node_prefix}/bin/python"
                    f"{environments.python_version(prefix)} on the nodes")
        uri, visibility = publish(archive, config)
    import skein
    python = f"{ENVIRONMENT}/bin/python"
    return NodePython(python, {ENVIRONMENT: skein.File(source=uri, type="archive", visibility=visibility)},
                      check=interpreter_check(python, f"cannot run {what}. Fix: install that Python "
                                              "on every node (or set yarn.environment.python-prefix to "
                                              "where the nodes have it), or ship a conda-pack "
                                              "environment, which carries its own interpreter"))


def interpreter_check(python: str, problem: str) -> str:
    """A launch line that fails in one line naming the host, before ``exec`` would
    fail with "No such file". The line goes to the container's log; for the
    ApplicationMaster the client reads it from there (yarn_report.launch_failure)."""
    quoted = shlex.quote(python)
    return (f"{quoted} -c '' >/dev/null 2>&1 || {{ printf 'yarnflow: host %s %s\\n' \"$(hostname)\" "
            f"{shlex.quote(problem)} >&2; exit 127; }}")


def publish(archive: Path, config: Configuration) -> tuple[str, str]:
    """Upload ``archive`` under its content digest, once; returns its URI and the
    visibility YARN can localize it with: PUBLIC (once per node) or PRIVATE (once per
    node and user)."""
    digest = file_digest(archive)
    settings = filesystem_settings(config)
    directory = settings.resolve(config.get(options.YARN_ENVIRONMENT_CACHE_DIR)
                                 or f"/user/{settings.user or getpass.getuser()}/.yarnflow-environments")
    fs = open_filesystem(directory, settings)
    uri = f"{directory.rstrip('/')}/{digest}.tar.gz"
    if not fs.exists(uri):
        fs.mkdirs(directory)
        with open(archive, "rb") as src:     # False: another client uploaded it meanwhile
            fs.write_whole(uri, iter(lambda: src.read(8 << 20), b""))
    return uri, "public" if world_readable(fs, uri) else "private"


def file_digest(path: Path) -> str:
    """The archive's SHA-256, remembered beside it by size and modification time."""
    st = path.stat()
    memo = path.with_name(f".{path.name}.sha256")
    stamp = f"{st.st_size}:{st.st_mtime_ns}"
    if memo.exists():
        saved_stamp, _, saved = memo.read_text().partition(" ")
        if saved_stamp == stamp:
            return saved
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            digest.update(chunk)
    try:
        memo.write_text(f"{stamp} {digest.hexdigest()}")
    except OSError:
        pass
    return digest.hexdigest()


def world_readable(fs: FileSystem, uri: str) -> bool:
    """YARN's PUBLIC cache takes a file only if everyone may read it and enter every
    folder above it; otherwise the application downloads its own copy."""
    path = fs.path(uri)
    permission = getattr(fs, "permission", None)
    if permission is None:
        return True
    if int(permission(uri), 8) & 0o004 == 0:
        return False
    parent = posixpath.dirname(path)
    while parent not in ("", "/"):
        if int(permission(fs.uri(parent)), 8) & 0o005 != 0o005:
            return False
        parent = posixpath.dirname(parent)
    return True
