"""Where a path lives: a path without a scheme resolves against the default file
system, a relative one against the working directory, as ``hadoop fs`` resolves them."""
from __future__ import annotations

import getpass
import os
import posixpath
from dataclasses import dataclass
from urllib.parse import urlsplit

LOCAL_FS = "file:///"


class LocalPathRefused(ValueError):
    """A job for a cluster names a path only this machine can see."""


@dataclass(frozen=True)
class FileSystemSettings:
    """What every process of a job needs to open its paths. The client builds it once
    (from ``fs.*`` options and, on YARN, the Hadoop configuration) and it travels with
    the operators, so the ApplicationMaster and the executors resolve nothing again.

    ``hdfs_http_addresses`` maps a NameNode's RPC authority (``host:port`` of an
    ``hdfs://`` URI) to its HTTP address, for WebHDFS; an authority not listed is
    reached at port 9870 of the same host (Hadoop 3's default). ``kerberos``: HDFS is
    in Hadoop's secure mode (``core.fs.webhdfs`` says how each process authenticates)."""
    default_fs: str = LOCAL_FS
    working_dir: str = ""
    user: str = ""
    hdfs_http_addresses: tuple[tuple[str, str], ...] = ()
    allow_local_paths: bool = False
    kerberos: bool = False

    @property
    def default_is_local(self) -> bool:
        return urlsplit(self.default_fs).scheme in ("", "file")

    @property
    def effective_user(self) -> str:
        return self.user or os.environ.get("HADOOP_USER_NAME") or getpass.getuser()

    def http_address(self, authority: str) -> str:
        for rpc, http in self.hdfs_http_addresses:
            if rpc == authority:
                return http
        host = authority.rsplit(":", 1)[0] if authority else ""
        if not host:
            raise ValueError("an hdfs:// URI without a NameNode and no hdfs:// default file "
                             "system: write hdfs://namenode:port/path or set fs.default-scheme")
        return f"{host}:9870"

    def resolve(self, path: str | os.PathLike[str]) -> str:
        """The full URI of ``path``: ``/data/x`` → ``hdfs://nn:9000/data/x`` when HDFS is
        the default, ``hdfs:///x`` → the default NameNode, ``x`` → under the working
        directory (``/user/<user>`` on a cluster, the current directory locally)."""
        text = os.fspath(path)
        parts = urlsplit(text)
        if len(parts.scheme) > 1:               # a scheme (not a Windows drive letter)
            scheme, authority, rest = parts.scheme.lower(), parts.netloc, parts.path
            if scheme == "file":
                return "file://" + posixpath.normpath(rest or "/")
            if not authority and urlsplit(self.default_fs).scheme == scheme:
                authority = urlsplit(self.default_fs).netloc
            return f"{scheme}://{authority}{_clean(rest)}"
        default = urlsplit(self.default_fs)
        if self.default_is_local:
            return "file://" + os.path.abspath(os.path.join(self.working_dir or os.getcwd(),
                                                            text))
        base = self.working_dir or f"/user/{self.effective_user}"
        return f"{default.scheme}://{default.netloc}{_clean(posixpath.join(base, text))}"

    def check_reachable(self, uri: str, role: str) -> None:
        """Refuse a local path while the default file system is a cluster's: the
        ApplicationMaster and the executors run on other hosts and would each read (or
        write) their own disk. ``fs.allow-local-paths`` is for clusters where every
        node mounts the path at the same place."""
        if self.allow_local_paths or self.default_is_local:
            return
        if urlsplit(uri).scheme == "file":
            local = urlsplit(uri).path
            cluster = f"{self.default_fs.rstrip('/')}{local}"
            fix = (f"put the data on the cluster's file system (yarnflow fs put {local} "
                   f"{cluster}) and read that" if role == "input" else
                   f"write to the cluster's file system ({cluster}, or a path without a "
                   "scheme)")
            raise LocalPathRefused(
                f"{role} {uri} is a local path, but the job runs on the cluster, whose nodes "
                f"cannot see this machine's disk. Fix: {fix}, or set fs.allow-local-paths: "
                f"true if every node mounts {local} at the same place")


def cluster_settings(default_fs: str, http_address: str = "",
                     allow_local_paths: bool = False, kerberos: bool = False) -> FileSystemSettings:
    """The settings of ``fs.default-scheme`` and ``fs.hdfs.http-address`` as the client
    filled them in: what the runtime opens its own files with (results on the cluster
    file system, the job event log)."""
    default_fs = default_fs or LOCAL_FS
    authority = urlsplit(default_fs).netloc if default_fs.startswith("hdfs://") else ""
    addresses = ((authority, http_address),) if http_address and authority else ()
    return FileSystemSettings(default_fs=default_fs, hdfs_http_addresses=addresses,
                              allow_local_paths=allow_local_paths, kerberos=kerberos)


def _clean(path: str) -> str:
    cleaned = posixpath.normpath(path or "/")
    return "/" + cleaned.lstrip("/")
