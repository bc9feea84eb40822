"""Hadoop delegation tokens, as a YARN container is given them and WebHDFS takes them.

On a secure cluster the client's Kerberos login never reaches the cluster's hosts:
YARN hands each container the delegation tokens the submitter obtained, in a file
named by ``HADOOP_TOKEN_FILE_LOCATION`` (Hadoop's ``Credentials`` storage: "HDTS", a
version byte, then Writables (version 0) or a length-delimited protobuf (version 1,
what Hadoop 3 writes)). WebHDFS takes an HDFS delegation token as its ``delegation``
parameter, in the URL form of ``Token.encodeToUrlString`` (the token's Writable
bytes, URL-safe Base64 without padding).

A token is a secret: nothing here logs or formats its password or its URL form;
``HadoopToken``'s repr names only its kind, service and lifetime.
"""
from __future__ import annotations

import base64
import functools
import io
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

TOKEN_FILE_ENV = "HADOOP_TOKEN_FILE_LOCATION"
HDFS_KIND = "HDFS_DELEGATION_TOKEN"
# What WebHDFS's own GETDELEGATIONTOKEN hands out, usable as the same credential.
WEBHDFS_KINDS = (HDFS_KIND, "WEBHDFS delegation", "SWEBHDFS delegation")
_MAGIC = b"HDTS"


_IN_URL = re.compile(r"((?:delegation|token)=)[^&\s'\"]+", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every token a URL could carry replaced (``delegation=…``)."""
    return _IN_URL.sub(r"\1<redacted>", text)


class TokenFileError(ValueError):
    """A token file that is not Hadoop's credentials storage."""


@dataclass(frozen=True)
class HadoopToken:
    identifier: bytes = field(repr=False)
    password: bytes = field(repr=False)
    kind: str
    service: str

    def writable(self) -> bytes:
        """The token as Hadoop's ``Token.write`` serialises it."""
        out = io.BytesIO()
        for part in (self.identifier, self.password, self.kind.encode(), self.service.encode()):
            _write_vlong(out, len(part))
            out.write(part)
        return out.getvalue()

    def url_string(self) -> str:
        """``Token.encodeToUrlString``: what WebHDFS's ``delegation=`` takes."""
        return base64.urlsafe_b64encode(self.writable()).decode().rstrip("=")

    @classmethod
    def from_url_string(cls, text: str) -> "HadoopToken":
        """A token as WebHDFS's GETDELEGATIONTOKEN answers it (``urlString``)."""
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        stream = io.BytesIO(raw)
        identifier, password = _read_bytes(stream), _read_bytes(stream)
        return cls(identifier, password, _read_bytes(stream).decode(),
                   _read_bytes(stream).decode())

    @property
    def delegation(self) -> "DelegationIdentifier | None":
        """The identifier's readable fields, where it is a delegation token's."""
        return DelegationIdentifier.parse(self.identifier)


@dataclass(frozen=True)
class DelegationIdentifier:
    """``AbstractDelegationTokenIdentifier``: who owns the token, who may renew it,
    and ``max_date_ms``, after which no renewal keeps it valid."""
    owner: str
    renewer: str
    real_user: str
    issue_date_ms: int
    max_date_ms: int
    sequence_number: int

    @classmethod
    def parse(cls, identifier: bytes) -> "DelegationIdentifier | None":
        stream = io.BytesIO(identifier)
        try:
            if stream.read(1) != b"\x00":      # the only version Hadoop writes
                return None
            owner, renewer, real_user = (_read_bytes(stream).decode() for _ in range(3))
            issue, max_date = _read_vlong(stream), _read_vlong(stream)
            sequence = _read_vlong(stream)
        except (EOFError, UnicodeDecodeError):
            return None
        return cls(owner, renewer, real_user, issue, max_date, sequence)

    def encode(self, master_key_id: int = 0) -> bytes:
        """The identifier's Writable bytes (what ``parse`` reads)."""
        out = io.BytesIO()
        out.write(b"\x00")
        for text in (self.owner, self.renewer, self.real_user):
            _write_text(out, text)
        for number in (self.issue_date_ms, self.max_date_ms, self.sequence_number,
                       master_key_id):
            _write_vlong(out, number)
        return out.getvalue()


def read_token_file(path: str | os.PathLike[str]) -> list[HadoopToken]:
    """Every token of a credentials file, in either of Hadoop's two formats."""
    return read_token_bytes(Path(path).read_bytes(), str(path))


def token_bytes(tokens: list[HadoopToken]) -> bytes:
    """Hadoop's version-0 credentials storage of ``tokens`` (no secret keys)."""
    out = io.BytesIO()
    out.write(_MAGIC + b"\x00")
    _write_vlong(out, len(tokens))
    for token in tokens:
        _write_text(out, token.service)
        out.write(token.writable())
    _write_vlong(out, 0)
    return out.getvalue()


def read_token_bytes(data: bytes, source: str = "the credentials") -> list[HadoopToken]:
    """The tokens of Hadoop's credentials storage, in either format."""
    if data[:4] != _MAGIC or len(data) < 5:
        raise TokenFileError(f"{source} is not a Hadoop token file (no HDTS header)")
    stream = io.BytesIO(data[5:])
    try:
        if data[4] == 0:
            return _read_writable_credentials(stream)
        if data[4] == 1:
            return _read_proto_credentials(stream)
    except EOFError:
        raise TokenFileError(f"{source} ends in the middle of a token") from None
    raise TokenFileError(f"{source} has token storage version {data[4]}, which Hadoop 3 "
                         "does not write")


def write_token_file(path: str | os.PathLike[str], tokens: list[HadoopToken]) -> None:
    """A credentials file (``token_bytes``), written private, then moved into place."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(token_bytes(tokens))
    os.replace(tmp, target)


def hdfs_token(tokens: list[HadoopToken], authority: str) -> HadoopToken | None:
    """The HDFS delegation token for the NameNode at ``authority`` (``host:port`` of
    its RPC address): Hadoop names a token's service by the NameNode's address
    (``ip:port``, or ``host:port`` where ``hadoop.security.token.service.use_ip`` is
    off). A single HDFS token serves any NameNode it could be for."""
    candidates = [t for t in tokens if t.kind in WEBHDFS_KINDS]
    if not candidates:
        return None
    wanted = set(_service_names(authority))
    matching = [t for t in candidates if t.service in wanted]
    if matching:
        return matching[-1]
    return candidates[0] if len(candidates) == 1 else None


@functools.lru_cache(maxsize=64)
def _service_names(authority: str) -> tuple[str, ...]:
    """The names a token's service may give a NameNode: looked up once per authority,
    not on every WebHDFS call (each call picks its token afresh)."""
    host, _, port = authority.rpartition(":")
    if not host:
        return (authority,)
    names = [authority]
    try:
        names.append(f"{socket.gethostbyname(host)}:{port}")
    except OSError:
        pass
    return tuple(names)


class ProcessCredentials:
    """The delegation tokens this process acts with: its container's token file,
    read once, and what a renewal hands it later (the newest token for a service
    wins). A process outside a secure container has none."""

    def __init__(self, tokens: list[HadoopToken] | None = None) -> None:
        self._lock = threading.Lock()
        self._tokens: list[HadoopToken] | None = tokens

    def tokens(self) -> list[HadoopToken]:
        with self._lock:
            if self._tokens is None:
                location = os.environ.get(TOKEN_FILE_ENV, "")
                self._tokens = read_token_file(location) if location and \
                    Path(location).is_file() else []
            return list(self._tokens)

    def update(self, fresh: list[HadoopToken]) -> None:
        """Fresh tokens replace the ones of the same kind and service."""
        current = self.tokens()
        replaced = {(t.kind, t.service) for t in fresh}
        with self._lock:
            self._tokens = [t for t in current if (t.kind, t.service) not in replaced] + fresh

    def hdfs_token(self, authority: str) -> HadoopToken | None:
        return hdfs_token(self.tokens(), authority)


CREDENTIALS = ProcessCredentials()


# --- Hadoop's Writable and protobuf encodings ------------------------------------------
def _read_vlong(stream: io.BytesIO) -> int:
    """``WritableUtils.readVLong``: one byte for -112..127, else a length byte and
    big-endian bytes (one's complement for a negative value)."""
    first = _read_exact(stream, 1)[0]
    first = first - 256 if first > 127 else first
    if first >= -112:
        return first
    size = (-119 - first) if first < -120 else (-111 - first)
    value = int.from_bytes(_read_exact(stream, size - 1), "big")
    return ~value if first < -120 else value


def _write_vlong(out: io.BytesIO, value: int) -> None:
    if -112 <= value <= 127:
        out.write((value & 0xFF).to_bytes(1, "big"))
        return
    length, negative = -112, value < 0
    if negative:
        value, length = ~value, -120
    size = max(1, (value.bit_length() + 7) // 8)
    out.write(((length - size) & 0xFF).to_bytes(1, "big"))
    out.write(value.to_bytes(size, "big"))


def _read_bytes(stream: io.BytesIO) -> bytes:
    return _read_exact(stream, _read_vlong(stream))


def _write_text(out: io.BytesIO, text: str) -> None:
    raw = text.encode()
    _write_vlong(out, len(raw))
    out.write(raw)


def _read_exact(stream: io.BytesIO, n: int) -> bytes:
    if n < 0:
        raise EOFError
    data = stream.read(n)
    if len(data) != n:
        raise EOFError
    return data


def _read_writable_credentials(stream: io.BytesIO) -> list[HadoopToken]:
    tokens = []
    for _ in range(_read_vlong(stream)):
        _read_bytes(stream)                     # the alias
        identifier, password = _read_bytes(stream), _read_bytes(stream)
        kind, service = _read_bytes(stream).decode(), _read_bytes(stream).decode()
        tokens.append(HadoopToken(identifier, password, kind, service))
    return tokens


def _read_varint(stream: io.BytesIO) -> int:
    shift = value = 0
    while True:
        byte = _read_exact(stream, 1)[0]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7


def _proto_fields(data: bytes) -> list[tuple[int, bytes | int]]:
    """The fields of one protobuf message: (number, bytes or varint)."""
    stream = io.BytesIO(data)
    fields: list[tuple[int, bytes | int]] = []
    while stream.tell() < len(data):
        key = _read_varint(stream)
        number, wire = key >> 3, key & 7
        if wire == 0:
            fields.append((number, _read_varint(stream)))
        elif wire == 2:
            fields.append((number, _read_exact(stream, _read_varint(stream))))
        elif wire in (1, 5):
            fields.append((number, _read_exact(stream, 8 if wire == 1 else 4)))
        else:
            raise TokenFileError(f"unexpected protobuf wire type {wire}")
    return fields


def _read_proto_credentials(stream: io.BytesIO) -> list[HadoopToken]:
    """``CredentialsProto`` (Security.proto): tokens = 1 of ``CredentialsKVProto``
    {alias = 1, token = 2 of ``TokenProto`` {identifier, password, kind, service}}."""
    message = _read_exact(stream, _read_varint(stream))
    tokens = []
    for number, kv in _proto_fields(message):
        if number != 1 or not isinstance(kv, bytes):
            continue
        for inner, token in _proto_fields(kv):
            if inner == 2 and isinstance(token, bytes):
                parts = {n: v for n, v in _proto_fields(token) if isinstance(v, bytes)}
                tokens.append(HadoopToken(parts.get(1, b""), parts.get(2, b""),
                                          parts.get(3, b"").decode(), parts.get(4, b"").decode()))
    return tokens
