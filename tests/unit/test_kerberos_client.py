"""The client's Kerberos login (issue 35, item 2): on a cluster in Hadoop's secure mode,
a keytab and its principal, or the user's ticket cache; without either the submission
is refused before anything reaches YARN, in one line that names the fix. The secure
cluster's tests prove the login itself; these prove the decision."""
from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from yarnflow.core.hadoop_conf import HadoopConf
from yarnflow.client.targets.kerberos import KerberosLogin, kerberos_login
from yarnflow.client.targets.yarn_client import prepare_config
from yarnflow.client.targets.yarn_errors import YarnError
from yarnflow.conf import Configuration

SECURE = {"hadoop.security.authentication": "kerberos"}


def hadoop(values: dict[str, str]) -> HadoopConf:
    return HadoopConf(dict(values), Path("/etc/hadoop/conf"))


def config(*overrides: str) -> Configuration:
    return Configuration.load(overrides=list(overrides))


def test_a_cluster_without_kerberos_needs_no_login():
    assert kerberos_login(config(), hadoop({}), has_ticket=lambda: False) is None
    assert kerberos_login(config(), hadoop({"hadoop.security.authentication": "simple"}),
                          has_ticket=lambda: False) is None


def test_the_ticket_cache_serves_when_it_holds_a_ticket():
    assert kerberos_login(config(), hadoop(SECURE), has_ticket=lambda: True) == KerberosLogin()
    # no klist to ask: Skein's driver finds out, as it would without the check
    assert kerberos_login(config(), hadoop(SECURE), has_ticket=lambda: None) == KerberosLogin()


def test_no_ticket_and_no_keytab_is_one_line_naming_kinit_and_the_options():
    with pytest.raises(YarnError) as err:
        kerberos_login(config(), hadoop(SECURE), has_ticket=lambda: False)
    text = str(err.value)
    assert "\n" not in text and "hadoop.security.authentication=kerberos" in text
    assert "run kinit" in text and "security.kerberos.login.keytab" in text


def test_the_ticket_cache_turned_off_needs_a_keytab():
    with pytest.raises(YarnError, match="use-ticket-cache is off"):
        kerberos_login(config("security.kerberos.login.use-ticket-cache=false"), hadoop(SECURE),
                       has_ticket=lambda: True)


def test_a_keytab_and_its_principal_log_skeins_driver_in(tmp_path):
    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"\x05\x02")
    login = kerberos_login(config(f"security.kerberos.login.keytab={keytab}",
                                  "security.kerberos.login.principal=alice@EXAMPLE.COM"),
                           hadoop(SECURE), has_ticket=lambda: False)
    assert login is not None and login.skein_args() == {"principal": "alice@EXAMPLE.COM",
                                                        "keytab": str(keytab)}


def test_half_a_keytab_login_or_an_unreadable_keytab_is_refused(tmp_path):
    with pytest.raises(YarnError, match="keytab is set but security.kerberos.login.principal"):
        kerberos_login(config(f"security.kerberos.login.keytab={tmp_path / 'k'}"), hadoop(SECURE))
    with pytest.raises(YarnError, match="principal is set but security.kerberos.login.keytab"):
        kerberos_login(config("security.kerberos.login.principal=alice"), hadoop(SECURE))
    with pytest.raises(YarnError, match="cannot be read"):
        kerberos_login(config(f"security.kerberos.login.keytab={tmp_path / 'missing'}",
                              "security.kerberos.login.principal=alice"), hadoop(SECURE))


@pytest.fixture
def secure_conf_dir(tmp_path, monkeypatch):
    """A Hadoop configuration of a secure cluster whose ResourceManager answers (a
    listening socket), and a `klist` on PATH that finds no ticket."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.address</name>"
        f"<value>127.0.0.1:{port}</value></property></configuration>")
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>hadoop.security.authentication</name>"
        "<value>kerberos</value></property></configuration>")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    klist = bin_dir / "klist"
    klist.write_text("#!/bin/sh\nexit 1\n")
    klist.chmod(klist.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    yield conf
    listener.close()


def test_a_submission_without_credentials_is_refused_before_yarn_hears_of_it(secure_conf_dir):
    with pytest.raises(YarnError, match="no valid ticket; fix: run kinit"):
        prepare_config(config())


def test_the_cli_says_it_in_one_line_without_a_traceback(secure_conf_dir, tmp_path):
    job = tmp_path / "job.py"
    job.write_text("import pyarrow as pa\nimport yarnflow.client as yf\n"
                   "p = yf.Pipeline('k')\np.from_arrow(pa.table({'x': [1]}))"
                   ".write_parquet('/tmp/yarnflow-kerberos-unused', 'overwrite')\np.execute()\n")
    proc = subprocess.run([sys.executable, "-m", "yarnflow.client.cli", "run", "-t",
                           "yarn-per-job", str(job)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr
    assert len(said) == 1 and said[0].startswith("error: this cluster uses Kerberos"), said
    assert "run kinit" in said[0]


def test_the_cluster_knows_the_client_by_its_principals_short_name(tmp_path, monkeypatch):
    from yarnflow.client.filesystems import filesystem_settings
    from yarnflow.client.targets.kerberos import cluster_user, short_name, ticket_principal
    assert short_name("alice@YARNFLOW.TEST") == "alice"
    assert short_name("etl/gateway.example@YARNFLOW.TEST") == "etl"
    keytab = tmp_path / "etl.keytab"
    keytab.write_bytes(b"\x05\x02")
    with_keytab = config(f"security.kerberos.login.keytab={keytab}",
                         "security.kerberos.login.principal=etl/gw@YARNFLOW.TEST")
    assert cluster_user(with_keytab, principal_of_cache=lambda: "alice@X") == "etl"
    assert cluster_user(config(), principal_of_cache=lambda: "alice@X") == "alice"
    assert cluster_user(config(), principal_of_cache=lambda: "") == ""
    # klist's own output, from a fake klist on PATH
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    klist = bin_dir / "klist"
    klist.write_text("#!/bin/sh\necho 'Ticket cache: FILE:/tmp/krb5cc_0'\n"
                     "echo 'Default principal: alice@YARNFLOW.TEST'\n")
    klist.chmod(klist.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert ticket_principal() == "alice@YARNFLOW.TEST"
    # a relative path of a Kerberos cluster's job goes under the principal's home
    settings = filesystem_settings(config("fs.default-scheme=hdfs://nn.example:9000",
                                          "fs.hdfs.http-address=nn.example:9870",
                                          "fs.hdfs.authentication=kerberos"))
    assert settings.kerberos and settings.user == "alice"
    assert settings.resolve("data/x") == "hdfs://nn.example:9000/user/alice/data/x"
