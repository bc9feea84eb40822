"""HDFS through WebHDFS: the NameNode's REST API, then the DataNodes' for the bytes.

It needs no Hadoop client libraries on the user's machine, in the ApplicationMaster
or in the executors (pyarrow's HadoopFileSystem needs libhdfs and a JVM), and it
reaches a DataNode exactly as an HDFS client does: the NameNode redirects each read to
a host that stores the block. fsspec's WebHDFS does the HTTP; this adds what HDFS
clients get from the Java API: block locations, a rename that says when it failed,
files created without their parent, and an access check.
"""
from __future__ import annotations

import logging
import os
import socket
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs
import requests
from fsspec.implementations.webhdfs import WebHDFile, WebHDFS

from yarnflow.core.fs.filesystem import Block, FileSystem
from yarnflow.core.fs.tokens import CREDENTIALS, HadoopToken, redact

log = logging.getLogger(__name__)

# Bytes a writer buffers before it sends them to the DataNode (one HTTP request each).
WRITE_BUFFER = 8 << 20
# A DataNode that takes no connection within this is passed over for another (HDFS's
# own client gives a pipeline's DataNode 60 s, dfs.client.socket-timeout; a connection
# on a working network takes milliseconds).
DATANODE_CONNECT_TIMEOUT_S = 5.0
# A DataNode that took the connection but then takes no bytes (or gives no answer) for
# this long is passed over too (HDFS's dfs.client.socket-timeout): on a busy machine a
# live DataNode stalls for seconds while it writes to disk, which is no reason to send
# the bytes elsewhere.
DATANODE_STALL_TIMEOUT_S = 60.0
# DataNodes a new file's bytes are offered to before the write fails.
DATANODE_ATTEMPTS = 3


def _environment_sets_http() -> bool:
    """Whether the environment holds what requests must look up per request: a proxy
    (which depends on the URL) or a .netrc file."""
    import urllib.request
    return bool(urllib.request.getproxies() or os.environ.get("NETRC")
                or any(os.path.exists(os.path.expanduser(f"~/{n}")) for n in (".netrc", "_netrc")))


def _environment_ca_bundle() -> str | None:
    """The CA bundle the environment names for requests (its own order), if any."""
    return os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or None


class _StrictFile(WebHDFile):   # type: ignore[misc]   # fsspec is untyped
    """A file being written, created only in an existing directory, and created with
    its first buffer's bytes: a file that fits one buffer (a part file, a job's
    summary) costs one CREATE. fsspec creates an empty file and appends to it, twice
    the round trips and two closes, each of which waits for HDFS to learn of the block."""

    def _initiate_upload(self) -> None:
        """Nothing yet: the first chunk creates the file."""

    def _upload_chunk(self, final: bool = False) -> bool:
        first = self.offset == 0 and "a" not in self.mode
        try:
            if first:
                self._create()
            else:
                self._send("APPEND", "POST", self.kwargs)
        except BaseException as err:
            # A failed file is done: fsspec would otherwise send its buffer again when
            # the object is collected, and print that failure's traceback as well.
            self.closed = True
            if isinstance(err, requests.HTTPError) and first and err.response is not None \
                    and err.response.status_code == 404:
                raise FileNotFoundError(f"cannot create {self.path}: its directory does "
                                        "not exist") from None
            raise
        return True

    def _create(self) -> None:
        """CREATE, as HDFS's own client writes a block: a DataNode that does not take
        the connection within DATANODE_CONNECT_TIMEOUT_S (its host just died, and the
        NameNode has not noticed yet: that takes it a heartbeat expiry, minutes by
        default), or then stalls past DATANODE_STALL_TIMEOUT_S, is excluded and the
        NameNode asked for another one, instead of waiting minutes for TCP to give up."""
        excluded: list[str] = []
        for attempt in range(1, DATANODE_ATTEMPTS + 1):
            kwargs = dict(self.kwargs, overwrite="true")
            if excluded:
                kwargs["excludedatanodes"] = ",".join(excluded)
            try:
                self._send("CREATE", "PUT", kwargs)
                return
            except requests.exceptions.ConnectionError as err:   # refused, or no answer
                datanode = getattr(err, "datanode", "")
                if not datanode or attempt == DATANODE_ATTEMPTS:
                    raise
                excluded += [name for name in _names_of(datanode) if name not in excluded]
                log.warning("DataNode %s did not take the connection for %s (%s): asking "
                            "the NameNode for another", datanode, self.path,
                            type(err).__name__)

    def _send(self, op: str, method: str, kwargs: dict[str, Any]) -> None:
        answer = self.fs._call(op, method, self.path, redirect=False, **kwargs)
        location = self.fs._apply_proxy(answer.headers["Location"])
        datanode = urlsplit(location)
        try:
            # Connected to first, under the short timeout: urllib3 sends a request's
            # body under the connect timeout, which would pass over a DataNode that is
            # only slow to take a large file's bytes.
            try:
                socket.create_connection(
                    (datanode.hostname, datanode.port or (443 if datanode.scheme == "https" else 80)),
                    timeout=DATANODE_CONNECT_TIMEOUT_S).close()
            except OSError as err:
                raise requests.exceptions.ConnectionError(f"{type(err).__name__}: {err}") from err
            self.fs.session.request(
                method, location, data=self.buffer.getvalue(),
                headers={"content-type": "application/octet-stream"},
                timeout=DATANODE_STALL_TIMEOUT_S).raise_for_status()
        except requests.exceptions.ConnectionError as err:
            err.datanode = datanode.hostname or ""     # type: ignore[attr-defined]
            raise


def _names_of(host: str) -> list[str]:
    """A DataNode as ``excludedatanodes`` takes it: the NameNode looks hosts up by
    address, so the address goes with the name."""
    try:
        return sorted({host, socket.gethostbyname(host)})
    except OSError:
        return [host]


class KerberosUnavailable(RuntimeError):
    """HDFS wants Kerberos and this process has neither a delegation token nor the
    means to negotiate (requests-gssapi)."""


class _WebHdfs(WebHDFS):   # type: ignore[misc]   # fsspec is untyped
    """fsspec's WebHDFS with files created strictly (``createparent=false``), a rename
    that never replaces and raises when it fails, and Hadoop's secure mode.

    How a call authenticates, in order: with the process's HDFS delegation token for
    this NameNode (a YARN container's, or a renewal's: looked up on every call, so a
    fresh token takes over at once); else, on a Kerberos cluster, with SPNEGO from the
    user's ticket (the client); else as ``user`` (``user.name=``, simple mode).
    A failed request's URL, which carries the token, is redacted before any error
    message is made from it."""

    def __init__(self, host: str, port: int, user: str | None = None, authority: str = "",
                 kerberos: bool = False, **kwargs: Any) -> None:
        if self._cached:            # fsspec hands out one instance per arguments
            return
        token = CREDENTIALS.hdfs_token(authority)
        super().__init__(host=host, port=port,
                         user=None if token is not None or kerberos else user, **kwargs)
        self.user = user
        self.authority = authority
        self.kerberos = kerberos
        if token is None and kerberos:
            if os.environ.get("CONTAINER_ID"):
                raise KerberosUnavailable(_no_token_here(authority or f"{host}:{port}"))
            self.session.auth = _spnego()
        self.session.hooks["response"].append(_redact_failed)
        # requests looks for proxies, a CA bundle and ~/.netrc in the environment on every
        # request (milliseconds of each, and a job makes dozens): a bundle is taken once
        # here, and where no proxy or .netrc is set it need not look again (a bundle named
        # in the environment made it look up proxies on every call too)
        bundle = _environment_ca_bundle()
        if bundle is not None:
            self.session.verify = bundle
        self.session.trust_env = _environment_sets_http()

    def _call(self, op: str, method: str = "get", path: str | None = None, data: Any = None,
              redirect: bool = True, **kwargs: Any) -> Any:
        token = CREDENTIALS.hdfs_token(self.authority)
        if token is not None:
            self.pars.pop("user.name", None)
            self.pars["delegation"] = token.url_string()
        return super()._call(op, method, path, data, redirect, **kwargs)

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
        """HDFS's rename2 (``renameoptions=NONE``): one request that fails when ``path2``
        exists, where the plain RENAME would move ``path1`` into a directory there and
        answer ``false`` for every other failure."""
        try:
            self._call("RENAME", method="put", path=path1, destination=path2,
                       renameoptions="NONE")
        except RuntimeError as err:    # fsspec's name for HDFS's other exceptions
            if self.exists(path2):
                raise FileExistsError(f"cannot rename {path1} to {path2}: {path2} exists") \
                    from None
            raise OSError(f"HDFS refused to rename {path1} to {path2}: {err}") from None


def _no_token_here(namenode: str) -> str:
    """Why a YARN container cannot reach a Kerberos HDFS: it never has a ticket, only
    the tokens its application was submitted with."""
    kinds = sorted({f"{t.kind} for {t.service}" for t in CREDENTIALS.tokens()})
    return (f"this container has no HDFS delegation token for the NameNode at {namenode} "
            f"(its tokens: {', '.join(kinds) or 'none'}); the client obtains one for the "
            "cluster's fs.defaultFS only. Fix: keep the job's data on fs.defaultFS")


def _spnego() -> Any:
    try:
        from requests_gssapi import HTTPSPNEGOAuth
    except ImportError:
        raise KerberosUnavailable(
            "HDFS on this cluster takes only Kerberos (SPNEGO), and this Python has no "
            "requests-gssapi. Fix: pip install 'yarnflow[kerberos]' (it builds gssapi "
            "against the system's Kerberos: apt-get install libkrb5-dev)") from None
    return HTTPSPNEGOAuth()


def keytab_spnego(principal: str, keytab: str) -> Any:
    """SPNEGO for requests, logged in from a keytab into a ticket cache of this process's
    memory (MIT's credential store): no kinit, and no ticket in a file anyone could
    read. Each call logs in afresh, so a ticket that expired is never used."""
    import gssapi
    auth_class = type(_spnego())
    name = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
    creds = gssapi.Credentials(name=name, usage="initiate",
                               store={"client_keytab": keytab,
                                      "ccache": f"MEMORY:yarnflow-{os.getpid()}"})
    return auth_class(creds=creds)


def obtain_delegation_token(http_address: str, auth: Any, renewer: str,
                            timeout: float) -> tuple[HadoopToken, float]:
    """A new HDFS delegation token from the NameNode's WebHDFS, asked for with ``auth``
    (SPNEGO: a delegation token cannot ask for another), and when it expires (epoch
    seconds) unless renewed: ``renewer`` must be the caller's own short name, as
    the NameNode answers a renewal only to the token's renewer."""
    session = requests.Session()
    session.auth = auth
    session.hooks["response"].append(_redact_failed)
    base = f"http://{http_address}/webhdfs/v1/"
    got = session.get(base, params={"op": "GETDELEGATIONTOKEN", "renewer": renewer},
                      timeout=timeout)
    got.raise_for_status()
    url_string = got.json()["Token"]["urlString"]
    renewed = session.put(base, params={"op": "RENEWDELEGATIONTOKEN", "token": url_string},
                          timeout=timeout)
    renewed.raise_for_status()
    return HadoopToken.from_url_string(url_string), renewed.json()["long"] / 1000.0


def _redact_failed(response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
    """requests names the URL in a failed response's error, and a WebHDFS URL can carry
    a delegation token (ours, or the one the NameNode put in a DataNode's redirect)."""
    if response.status_code >= 400:
        response.url = redact(response.url)
    return response


def strict_webhdfs(url: str, **storage_options: Any) -> tuple[_WebHdfs, str]:
    """The fsspec file system and path of a ``webhdfs://`` URL, as yarnflow writes
    HDFS (for what speaks fsspec directly: the job history, a session's job graphs)."""
    options = {**_WebHdfs._get_kwargs_from_urls(url), **storage_options}
    return _WebHdfs(**options), _WebHdfs._strip_protocol(url)


class WebHdfsFileSystem(FileSystem):
    def __init__(self, http_address: str, user: str, scheme: str = "hdfs",
                 authority: str = "", kerberos: bool = False) -> None:
        host, _, port = http_address.rpartition(":")
        self.webhdfs = _WebHdfs(host=host, port=int(port), user=user, authority=authority,
                                kerberos=kerberos)
        super().__init__(pafs.PyFileSystem(pafs.FSSpecHandler(self.webhdfs)), scheme, authority)

    def block_locations(self, uri: str) -> list[Block]:
        reply = self.webhdfs._call("GETFILEBLOCKLOCATIONS", path=self.path(uri), offset=0,
                                   length=1 << 62).json()
        blocks = (reply.get("BlockLocations") or {}).get("BlockLocation") or []
        return [Block(b["offset"], b["length"], tuple(b.get("hosts") or ())) for b in blocks]

    def check_writable(self, uri: str) -> bool:
        path = self.path(uri)
        while True:
            try:
                self.webhdfs._call("CHECKACCESS", path=path, fsaction="-w-")
                return path == self.path(uri)
            except FileNotFoundError:
                if path in ("", "/"):
                    return False
                path = path.rstrip("/").rsplit("/", 1)[0] or "/"
            except PermissionError as err:
                raise PermissionError(
                    f"{self.uri(path)} is not writable by {self.webhdfs.user}: "
                    f"{str(err).splitlines()[0]}") from None

    def modified(self, uri: str) -> float | None:
        """The NameNode's modification time (fsspec's listing does not pass it on)."""
        try:
            status = self.webhdfs._call("GETFILESTATUS", path=self.path(uri)).json()
        except FileNotFoundError:
            return None
        return float(status["FileStatus"]["modificationTime"]) / 1000

    def rename(self, src: str, dst: str) -> None:
        self.webhdfs.mv(self.path(src), self.path(dst))

    def list_dir(self, uri: str) -> list[str]:
        """One LISTSTATUS: pyarrow's listing through fsspec asks the NameNode up to four
        times (is it a directory, list, and each entry's details again)."""
        try:
            reply = self.webhdfs._call("LISTSTATUS", path=self.path(uri)).json()
        except FileNotFoundError:
            return []
        statuses = reply["FileStatuses"]["FileStatus"]
        if len(statuses) == 1 and not statuses[0]["pathSuffix"] and statuses[0]["type"] == "FILE":
            raise NotADirectoryError(f"{uri} is a file, not a directory")
        return sorted(status["pathSuffix"] for status in statuses)

    def delete(self, uri: str) -> None:
        """One recursive DELETE, which HDFS answers ``false`` for a path that is not
        there, instead of a status request first."""
        self.webhdfs._call("DELETE", method="delete", path=self.path(uri), recursive="true")

    def mkdirs_private(self, uri: str) -> None:
        self.mkdirs(uri)
        self.webhdfs.chmod(self.path(uri), "700")     # WebHDFS takes the octal digits

    def permission(self, uri: str) -> str:
        """The octal permission digits HDFS keeps for ``uri`` (e.g. "755")."""
        return str(self.webhdfs.info(self.path(uri)).get("permission", "0"))
