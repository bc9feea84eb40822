"""Hadoop delegation tokens (core/fs/tokens.py) against vectors Hadoop 3.5's own
classes wrote (tests/unit/data/hadoop-tokens/MakeTokens.java), and how WebHDFS calls
authenticate with them (core/fs/webhdfs.py), against a loopback HTTP server."""
from __future__ import annotations

import json
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from yarnflow.core.fs import tokens as tokens_module
from yarnflow.core.fs import webhdfs
from yarnflow.core.fs.tokens import (HadoopToken, ProcessCredentials, TokenFileError, hdfs_token,
                                     read_token_file, redact, write_token_file)

DATA = Path(__file__).parent / "data" / "hadoop-tokens"
HADOOP_URL_STRING = (DATA / "url-string.txt").read_text().strip()


def token(kind: str = "HDFS_DELEGATION_TOKEN", service: str = "10.0.0.1:9000",
          password: bytes = b"pw") -> HadoopToken:
    return HadoopToken(b"\x00\x05alice\x04yarn\x00\x01\x02\x03\x04", password, kind, service)


@pytest.mark.parametrize("version", ["v0", "v1"])
def test_both_of_hadoops_storage_formats_read_as_the_token_hadoop_wrote(version):
    [read] = read_token_file(DATA / f"tokens-{version}.bin")
    assert (read.kind, read.service) == ("HDFS_DELEGATION_TOKEN", "172.18.0.2:9000")
    assert read.password == b"not-a-real-password"
    assert read.url_string() == HADOOP_URL_STRING          # Token.encodeToUrlString
    ident = read.delegation
    assert ident is not None
    assert (ident.owner, ident.renewer, ident.real_user) == ("alice", "yarn", "")
    assert (ident.issue_date_ms, ident.max_date_ms, ident.sequence_number) == \
        (1795000000000, 1795604800000, 300)
    assert ident.encode(master_key_id=7) == read.identifier      # Hadoop's own bytes


def test_a_url_string_reads_back_and_a_written_file_is_hadoops_own_bytes(tmp_path):
    parsed = HadoopToken.from_url_string(HADOOP_URL_STRING)
    assert parsed == read_token_file(DATA / "tokens-v1.bin")[0]
    out = tmp_path / "container_tokens"
    write_token_file(out, [parsed])
    # Hadoop's version-0 file also holds one secret key, which a written file leaves out
    hadoops = (DATA / "tokens-v0.bin").read_bytes()
    assert out.read_bytes()[:-1] == hadoops[:len(out.read_bytes()) - 1]
    assert read_token_file(out) == [parsed]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_a_file_that_is_not_a_token_file_is_refused(tmp_path):
    bad = tmp_path / "tokens"
    bad.write_bytes(b"HDTX\x01")
    with pytest.raises(TokenFileError, match="no HDTS header"):
        read_token_file(bad)
    bad.write_bytes(b"HDTS\x07")
    with pytest.raises(TokenFileError, match="version 7"):
        read_token_file(bad)
    bad.write_bytes((DATA / "tokens-v0.bin").read_bytes()[:20])
    with pytest.raises(TokenFileError, match="middle of a token"):
        read_token_file(bad)


def test_the_token_for_a_namenode_is_the_one_named_by_its_address():
    rm = token(kind="RM_DELEGATION_TOKEN", service="10.0.0.1:8032")
    first, second = token(service="10.0.0.1:9000"), token(service="10.0.0.2:9000")
    assert hdfs_token([rm, first, second], "10.0.0.2:9000") is second
    assert hdfs_token([rm, first, second], "10.0.0.9:9000") is None   # ambiguous: none
    assert hdfs_token([rm, first], "nn.example:9000") is first        # the only one
    assert hdfs_token([rm], "10.0.0.1:9000") is None
    named = token(service="localhost:9000")
    assert hdfs_token([first, named], "localhost:9000") is named
    by_address = token(service="127.0.0.1:9000")
    assert hdfs_token([first, by_address], "localhost:9000") is by_address


def test_a_process_reads_its_containers_tokens_once_and_takes_fresh_ones(tmp_path, monkeypatch):
    path = tmp_path / "container_tokens"
    old, rm = token(password=b"old"), token(kind="RM_DELEGATION_TOKEN", service="x:8032")
    write_token_file(path, [old, rm])
    monkeypatch.setenv(tokens_module.TOKEN_FILE_ENV, str(path))
    creds = ProcessCredentials()
    assert creds.tokens() == [old, rm]
    path.unlink()                                 # read once: a later read needs no file
    assert creds.hdfs_token("10.0.0.1:9000") == old
    fresh = token(password=b"fresh")
    creds.update([fresh])
    assert creds.tokens() == [rm, fresh]
    monkeypatch.delenv(tokens_module.TOKEN_FILE_ENV)
    assert ProcessCredentials().tokens() == []


def test_redact_hides_every_token_a_url_carries():
    url = ("http://dn1:9864/webhdfs/v1/x?op=OPEN&delegation=SECRET-1&namenoderpcaddress=rm:9000"
           "&token=SECRET-2")
    said = redact(f"403 Client Error: Forbidden for url: {url}")
    assert "SECRET" not in said
    assert "delegation=<redacted>&namenoderpcaddress=rm:9000" in said


class _NameNode(BaseHTTPRequestHandler):
    """Records each call's parameters; answers LISTSTATUS, and 403 to anything else."""
    calls: list[dict[str, list[str]]] = []

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        type(self).calls.append(query)
        if query.get("op") == ["LISTSTATUS"]:
            body, code = {"FileStatuses": {"FileStatus": []}}, 200
        else:
            body, code = {"message": "no"}, 403
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def namenode():
    _NameNode.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NameNode)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    thread.join(timeout=10)


def test_webhdfs_calls_carry_the_delegation_token_not_a_user_name_and_errors_hide_it(
        namenode, monkeypatch):
    creds = ProcessCredentials([token(service=f"127.0.0.1:{namenode}", password=b"first")])
    monkeypatch.setattr(webhdfs, "CREDENTIALS", creds)
    fs = webhdfs.WebHdfsFileSystem(f"127.0.0.1:{namenode}", user="mallory",
                                   authority=f"127.0.0.1:{namenode}", kerberos=True)
    assert fs.list_dir(f"hdfs://127.0.0.1:{namenode}/data") == []
    first = _NameNode.calls[-1]
    assert "user.name" not in first
    assert HadoopToken.from_url_string(first["delegation"][0]).password == b"first"
    # a renewal's token takes over on the next call
    creds.update([token(service=f"127.0.0.1:{namenode}", password=b"second")])
    fs.list_dir(f"hdfs://127.0.0.1:{namenode}/data")
    assert HadoopToken.from_url_string(_NameNode.calls[-1]["delegation"][0]).password == b"second"
    with pytest.raises(Exception) as failed:
        fs.webhdfs._call("GETCONTENTSUMMARY", path="/data")
    assert "delegation=<redacted>" in str(failed.value)
    assert _NameNode.calls[-1]["delegation"][0] not in str(failed.value)


def test_simple_mode_names_the_user(namenode, monkeypatch):
    monkeypatch.setattr(webhdfs, "CREDENTIALS", ProcessCredentials([]))
    fs = webhdfs.WebHdfsFileSystem(f"127.0.0.1:{namenode}", user="alice",
                                   authority=f"127.0.0.1:{namenode}-simple")
    fs.list_dir(f"hdfs://127.0.0.1:{namenode}/data")
    assert _NameNode.calls[-1]["user.name"] == ["alice"]
    assert "delegation" not in _NameNode.calls[-1]


def test_kerberos_without_a_token_or_gssapi_says_what_to_install(namenode, monkeypatch):
    monkeypatch.setattr(webhdfs, "CREDENTIALS", ProcessCredentials([]))
    monkeypatch.setitem(sys.modules, "requests_gssapi", None)     # as if not installed
    with pytest.raises(webhdfs.KerberosUnavailable, match=r"pip install 'yarnflow\[kerberos\]'"):
        webhdfs.WebHdfsFileSystem(f"127.0.0.1:{namenode}", user="alice",
                                  authority=f"127.0.0.1:{namenode}-krb", kerberos=True)


def test_the_environment_is_read_for_proxies_once_and_honoured_when_it_sets_one(
        namenode, monkeypatch, tmp_path):
    monkeypatch.setattr(webhdfs, "CREDENTIALS", ProcessCredentials([]))
    monkeypatch.setenv("HOME", str(tmp_path))          # no ~/.netrc
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                 "ALL_PROXY", "no_proxy", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NETRC"):
        monkeypatch.delenv(name, raising=False)
    plain = webhdfs.WebHdfsFileSystem(f"127.0.0.1:{namenode}", user="alice",
                                      authority=f"127.0.0.1:{namenode}-plain")
    assert plain.list_dir(f"hdfs://127.0.0.1:{namenode}/data") == []
    assert plain.webhdfs.session.trust_env is False     # nothing to look up per request
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    proxied = webhdfs.WebHdfsFileSystem(f"127.0.0.1:{namenode}", user="alice",
                                        authority=f"127.0.0.1:{namenode}-proxied")
    assert proxied.webhdfs.session.trust_env is True    # requests applies HTTP_PROXY/NO_PROXY
    assert proxied.list_dir(f"hdfs://127.0.0.1:{namenode}/data") == []
    # a CA bundle alone is taken once, as the session's own: nothing left to look up
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.delenv("NO_PROXY")
    bundle = tmp_path / "ca.pem"
    bundle.write_text("")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    trusted = webhdfs.WebHdfsFileSystem(f"127.0.0.1:{namenode}", user="alice",
                                        authority=f"127.0.0.1:{namenode}-bundle")
    assert trusted.webhdfs.session.trust_env is False
    assert trusted.webhdfs.session.verify == str(bundle)
    assert trusted.list_dir(f"hdfs://127.0.0.1:{namenode}/data") == []
