"""The dockerised cluster in Hadoop's secure mode (issue 35, item 1): `cluster up
--secure` adds a KDC host, makes every host's principals and keytab as it starts, and
turns Kerberos on in HDFS's and YARN's RPC (SASL on HDFS's data transfer), SPNEGO on
every web server, and YARN's application ACLs with yarnadmin as its admin.

It runs on a cluster of its own, started secure (tests/conftest.py's
DOCKER_CLUSTERS), beside the others.

- Without a ticket, Skein's driver refuses the edge host's client, and yarnflow
  refuses to submit in one line that names kinit, before YARN hears of anything.
- With alice's ticket, YARN answers, and a Skein application (staged on HDFS with
  alice's delegation token, its ApplicationMaster launched by a Kerberos
  NodeManager) finishes SUCCEEDED as alice.
- The README's example, per-job and in a session, as alice: the client reaches
  WebHDFS with SPNEGO (its data under /user/alice), the ApplicationMaster and the
  executors with the HDFS delegation token YARN gave their containers; exact output.
  WebHDFS and the ResourceManager's web refuse a caller that only names a user.
- bob neither sees alice's job's pages nor kills it; yarnadmin does both.
- A slot profile's node label places its subtasks in that partition (a host that
  yarnadmin labels for the test's length); a label no host has is refused.
- A session with a keytab outlives three lifetimes of its tokens; without a keytab,
  `yarnflow status` says when they end."""
from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import uuid

import pytest

from tests.conftest import wait_until
from tests.docker.conftest import CLUSTER, ROOT, WORKERS, DockerCluster
from tests.docker.test_ship_environment import EXACT, FAST
from yarnflow.core.fs.tokens import HadoopToken, read_token_bytes

SPEC = """name: secure-check
queue: default
master:
  resources: {memory: 256, vcores: 1}
  script: echo secure-ok
"""


@pytest.fixture(scope="module")
def secure(docker_cluster: DockerCluster) -> DockerCluster:
    """The module's cluster, secure (a no-op on one started so; `cluster up --secure`
    restarts an insecure one kept up with YARNFLOW_KEEP_CLUSTER)."""
    proc = subprocess.run([sys.executable, str(CLUSTER), "up", "--secure"], capture_output=True,
                          text=True, timeout=2400, env={**os.environ, **docker_cluster.env})
    assert proc.returncode == 0, f"could not start the secure cluster:\n{proc.stderr[-4000:]}"
    env = dict(line.removeprefix("export ").partition("=")[::2] for line in proc.stdout.splitlines())
    assert env["YARNFLOW_TEST_SECURE"] == "1", proc.stdout
    return DockerCluster(env)


@pytest.fixture
def alice(secure: DockerCluster):
    """alice's ticket on the edge host for the test's length."""
    kinit = secure.edge("kinit", "-kt", "/etc/security/keytabs/host.keytab", "alice")
    assert kinit.returncode == 0, kinit.stderr
    yield secure
    secure.edge("kdestroy")


# How often a wait here asks the cluster: each question is a `cluster web` (a Python
# process here, a klist and a Python process on the edge host for SPNEGO, about
# 0.5 CPU-s), so waits poll every few seconds, not continuously.
POLL_S = 2.0


def app(secure: DockerCluster, app_id: str) -> dict:
    """The application's report, as YARN's admin sees it."""
    return secure.rest(f"/ws/v1/cluster/apps/{app_id}")["app"]


def test_without_a_ticket_yarn_and_yarnflow_refuse_the_client(secure: DockerCluster):
    secure.edge("kdestroy")
    assert secure.edge("klist", "-s").returncode != 0
    # Skein's driver says so at once (YARN's own CLI would retry for many minutes)
    listed = secure.edge("skein", "application", "ls", timeout=120)
    assert listed.returncode != 0, listed.stdout
    assert "Kerberos ticket not found" in listed.stderr, listed.stderr[-2000:]
    before = secure.rest("/ws/v1/cluster/apps").get("apps") or {}
    run = secure.edge("yarnflow", "run", "-t", "yarn-per-job",
                      str(ROOT / "tests" / "yarn" / "pipelines" / "shapes.py"), "--", "long",
                      "--out", "/tmp/yarnflow-secure-unused", timeout=300)
    said = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    assert run.returncode != 0 and len(said) == 1, said
    assert said[0].startswith("error: this cluster uses Kerberos") and "run kinit" in said[0]
    assert (secure.rest("/ws/v1/cluster/apps").get("apps") or {}) == before


def test_with_a_ticket_a_skein_application_runs_on_the_secure_cluster(alice: DockerCluster):
    secure = alice
    listed = secure.edge("skein", "application", "ls", timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    wrote = secure.edge("sh", "-c", f"printf '%s' '{SPEC}' > /tmp/secure-check.yaml")
    assert wrote.returncode == 0, wrote.stderr
    submitted = secure.edge("skein", "application", "submit", "/tmp/secure-check.yaml",
                            timeout=300)
    assert submitted.returncode == 0, submitted.stderr[-3000:]
    app_id = submitted.stdout.strip().split()[-1]
    final = wait_until(lambda: (a := app(secure, app_id))["state"] in
                       ("FINISHED", "FAILED", "KILLED") and a, 300,
                       f"{app_id} to finish", interval=POLL_S)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    assert final["user"] == "alice"


ANONYMOUS = """
import sys, urllib.error, urllib.request
for url in sys.argv[1:]:
    try:
        print(urllib.request.urlopen(url, timeout=15).status)
    except urllib.error.HTTPError as err:
        print(err.code)
"""


def test_web_servers_take_no_caller_that_only_names_a_user(secure: DockerCluster):
    """WebHDFS, and the ResourceManager's pages and REST API (so its proxy always knows
    who asks for an application's page)."""
    rm = secure.env["YARNFLOW_TEST_YARN_RM"]
    urls = [rm.rsplit(":", 1)[0] + ":9870/webhdfs/v1/user/alice?op=LISTSTATUS&user.name=alice",
            rm + "/ws/v1/cluster/apps?user.name=alice", rm + "/cluster?user.name=alice"]
    asked = secure.edge("python", "-c", ANONYMOUS, *urls, timeout=120)
    assert asked.returncode == 0, asked.stderr[-2000:]
    assert asked.stdout.split() == ["401"] * len(urls), asked.stdout


def exact_output(secure: DockerCluster, data: str, out: str) -> dict:
    check = secure.edge("python", "-c", EXACT, data, out, timeout=300)
    assert check.returncode == 0, check.stderr[-3000:]
    return json.loads(check.stdout.splitlines()[-1])


def test_the_readme_example_runs_per_job_as_alice_exactly(alice: DockerCluster):
    base = f"yarnflow-tests/secure-{uuid.uuid4().hex[:8]}"      # under /user/alice
    run = alice.edge("yarnflow", "run", "-t", "yarn-per-job", "--attach", "--no-progress", *FAST,
                     "examples/skewed_join.py", "--", "--rows", "30000", "--data", f"{base}/data",
                     "--out", f"{base}/out", timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "/user/alice/" + base in run.stdout, run.stdout[-2000:]
    assert exact_output(alice, f"{base}/data", f"{base}/out") == {"rows": 30000, "exact": True}
    app_id = next(w for w in run.stdout.split() if w.startswith("application_"))
    assert app(alice, app_id)["user"] == "alice"


def test_the_readme_example_runs_in_a_session_as_alice_exactly(alice: DockerCluster):
    base = f"yarnflow-tests/secure-session-{uuid.uuid4().hex[:8]}"
    # the session's ApplicationMaster may land on a host that has not localized alice's
    # private environment yet (621 MB; minutes on a busy 2-core machine): how long a
    # cold start takes is not what this test checks (a full run failed on the 180 s default)
    started = alice.edge("yarnflow", "session", "start", "--name", "secure", "--min-executors", "1",
                         *FAST, "-D", "session.start-timeout=540 s", timeout=600)
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    try:
        run = alice.edge("yarnflow", "run", "-t", "yarn-session", "-a", "secure", "--attach",
                         "--no-progress", "examples/skewed_join.py", "--", "--rows", "30000",
                         "--data", f"{base}/data", "--out", f"{base}/out", timeout=900)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert exact_output(alice, f"{base}/data", f"{base}/out") == {"rows": 30000,
                                                                      "exact": True}
        history = alice.edge("yarnflow", "history", "-a", "secure", timeout=300)
        assert history.returncode == 0 and "FINISHED" in history.stdout, \
            history.stdout[-2000:] + history.stderr[-2000:]
        app_id = next(w for w in started.stdout.split() if w.startswith("application_"))
        assert_no_secret_shown(alice, app_id)
    finally:
        stopped = alice.edge("yarnflow", "session", "stop", "secure", timeout=300)
        assert stopped.returncode == 0, stopped.stdout[-2000:] + stopped.stderr[-2000:]


def as_user(secure: DockerCluster, user: str, *cmd: str, timeout: float = 300):
    """``cmd`` on the edge host as ``user``: their own ticket cache and home directory
    (so not alice's application credentials, which yarnflow keeps in her home)."""
    home, cache = f"/tmp/home-{user}", f"FILE:/tmp/krb5cc_{user}"
    keytab = f"/etc/security/keytabs/{user}.user.keytab"
    script = f'mkdir -p {home} && kinit -kt {keytab} {user} && exec "$@"'
    return secure.edge("env", f"HOME={home}", f"KRB5CCNAME={cache}", "sh", "-c", script, user,
                       *cmd, timeout=timeout)


def test_another_user_can_neither_view_nor_kill_alices_job_and_the_admin_can(alice):
    """Application ACLs (issue 35, item 5): by default only the owner and YARN's admins.
    Through the ResourceManager's proxy (which knows the caller from SPNEGO) bob gets
    no page of alice's job, not even its REST API; YARN refuses his kill, and
    `yarnflow cancel` says so in one line; yarnadmin sees the page and kills the job."""
    base = f"yarnflow-tests/acls-{uuid.uuid4().hex[:8]}"
    run = alice.edge("yarnflow", "run", "-t", "yarn-per-job", *FAST, SHAPES, "--", "long",
                     "--work", "20", "--out", f"{base}/out", timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    app_id = next(w for w in run.stdout.split() if w.startswith("application_"))
    page = f"/proxy/{app_id}/pages/yarnflow/jobs/overview"
    try:
        def running(user: str) -> dict | None:
            status, body = alice.web(page, user)
            return json.loads(body) if status == 200 and body.startswith("{") else None
        owned = wait_until(lambda: running("alice"), 300, "alice's page of her running job",
                           interval=POLL_S)
        assert owned["jobs"], owned

        # bob: past the proxy's "this is someone else's application" page, Skein's 403
        for path in (page, f"{page}?proxyapproved=true", f"/proxy/{app_id}/pages/yarnflow/"):
            status, body = alice.web(path, "bob")
            assert owned["jobs"][0]["jid"] not in body, (path, status, body[:500])
        assert alice.web(f"{page}?proxyapproved=true", "bob")[0] == 403
        refused = as_user(alice, "bob", "yarn", "application", "-kill", app_id)
        assert refused.returncode != 0
        assert "bob" in refused.stdout + refused.stderr and \
            "MODIFY_APP" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
        cancel = as_user(alice, "bob", "yarnflow", "cancel", app_id)
        assert cancel.returncode != 0 and "Traceback" not in cancel.stdout + cancel.stderr
        said = [line for line in (cancel.stdout + cancel.stderr).splitlines() if line.strip()]
        assert len(said) == 1 and "bob" in said[0] and app_id in said[0], said
        assert app(alice, app_id)["state"] == "RUNNING"

        # yarnadmin, YARN's admin: sees the page, and kills the job
        status, body = alice.web(f"{page}?proxyapproved=true", "yarnadmin")
        assert status == 200 and owned["jobs"][0]["jid"] in body, (status, body[:500])
        killed = as_user(alice, "yarnadmin", "yarnflow", "cancel", app_id)
        assert killed.returncode == 0, killed.stdout[-2000:] + killed.stderr[-2000:]
        final = wait_until(lambda: (a := app(alice, app_id))["state"] in
                           ("FINISHED", "FAILED", "KILLED") and a, 120, f"{app_id} to end",
                           interval=POLL_S)
        assert final["state"] == "KILLED", final
    finally:
        alice.edge("yarn", "application", "-kill", app_id, timeout=120)


# On the edge host, after a run: where each vertex's subtasks ran (host, node label of
# their slot profile), from the application's archive, and the output's keys in order.
PLACED = """
import json, os, sys
from yarnflow.client import files
from yarnflow.client.targets.yarn_apps import YarnApplication
app_id, out = sys.argv[1:3]
with YarnApplication(app_id, timeout=30) as app:
    details = app.archived_details()
where = {v.name: [[s.host, s.slot_profile.node_label if s.slot_profile else None]
                  for s in v.subtasks] for v in details.vertices}
keys = sorted(files.read_table(out).column("k").to_pylist())
print(json.dumps({"where": where, "exact": keys == list(range(2000))}), flush=True)
os._exit(0)
"""


@pytest.fixture
def labelled_host(alice: DockerCluster):
    """The last NodeManager host by name in the partition highmem (exclusive) while the
    test runs, labelled by yarnadmin: on a cluster that enforces ACLs, only YARN's
    admin may. Its short name (nm3)."""
    host = sorted(n["nodeHostName"] for n in alice.rest("/ws/v1/cluster/nodes")["nodes"]["node"]
                  if n["state"] == "RUNNING")[-1]

    def rmadmin(*args: str) -> None:
        done = as_user(alice, "yarnadmin", "yarn", "rmadmin", *args, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def labels() -> set[str]:
        nodes = alice.rest("/ws/v1/cluster/nodes")["nodes"]["node"]
        return next(set(n.get("nodeLabels") or ()) for n in nodes if n["nodeHostName"] == host)
    known = {i["name"] for i in alice.rest("/ws/v1/cluster/get-node-labels").get("nodeLabelInfo")
             or ()}
    if "highmem" not in known:
        rmadmin("-addToClusterNodeLabels", "highmem(exclusive=true)")
    rmadmin("-replaceLabelsOnNode", f"{host}=highmem")
    try:
        wait_until(lambda: labels() == {"highmem"}, 60, f"{host} in partition highmem",
                   interval=POLL_S)
        yield host.split(".")[0]
    finally:
        rmadmin("-replaceLabelsOnNode", f"{host}=")
        wait_until(lambda: not labels(), 60, f"{host} back in the default partition",
                   interval=POLL_S)


def test_a_labelled_profile_runs_in_its_partition_as_alice(alice, labelled_host):
    """Node labels per slot profile (issue 35, item 4) on the secure cluster: the map
    that names highmem runs on the labelled host, every other subtask outside it, the
    output exact; a label no host has is refused before anything is submitted."""
    base = f"yarnflow-tests/labels-{uuid.uuid4().hex[:8]}"
    run = alice.edge("yarnflow", "run", "-t", "yarn-per-job", "--attach", "--no-progress", *FAST,
                     "-D", "taskmanager.numberOfTaskSlots=1", SHAPES, "--", "labelled",
                     "--work", "0.5", "--out", f"{base}/out", timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    app_id = next(w for w in run.stdout.split() if w.startswith("application_"))
    placed = alice.edge("python", "-c", PLACED, app_id, f"{base}/out", timeout=300)
    assert placed.returncode == 0, placed.stderr[-3000:]
    found = json.loads(placed.stdout.splitlines()[-1])
    assert found["exact"], found
    where = found["where"]
    labelled = where.pop("labelled-op")
    assert len(labelled) == 2 and all(h.split(".")[0] == labelled_host and label == "highmem"
                                      for h, label in labelled), labelled
    others = [entry for entries in where.values() for entry in entries]
    assert len(others) == 4 and all(h and h.split(".")[0] != labelled_host and not label
                                    for h, label in others), where

    refused = alice.edge("yarnflow", "run", "-t", "yarn-per-job", *FAST, SHAPES, "--", "labelled",
                         "--label", "nosuchlabel", "--out", f"{base}/unused", timeout=300)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    said = [line for line in (refused.stdout + refused.stderr).splitlines() if "nosuchlabel" in line]
    assert len(said) == 1 and "(its labels: highmem)" in said[0], said


def container_tokens(secure: DockerCluster, app_id: str) -> list[HadoopToken]:
    """The delegation tokens YARN gave the application's containers, read from their
    token files on the worker hosts (Hadoop's credentials storage). One tar stream a
    host: a session releases idle executors meanwhile, and their files go with them
    (tar passes over a file that vanished; the ApplicationMaster's stays)."""
    found: list[HadoopToken] = []
    for host in WORKERS:
        packed = subprocess.run(
            ["docker", "exec", host, "sh", "-c",
             f"find /data/nm/local/usercache/*/appcache/{app_id} -name container_tokens "
             "2>/dev/null | tar --ignore-failed-read -cf - -T - 2>/dev/null"],
            capture_output=True, timeout=120, env={**os.environ, **secure.env})
        if not packed.stdout:
            continue
        with tarfile.open(fileobj=io.BytesIO(packed.stdout)) as tar:
            for member in tar.getmembers():
                data = tar.extractfile(member) if member.isfile() else None
                if data is not None:
                    found += read_token_bytes(data.read(), f"{host}:{member.name}")
    return found


def written_forms(secret: bytes) -> list[str]:
    return [base64.b64encode(secret).decode(), base64.urlsafe_b64encode(secret).decode().rstrip("="),
            secret.hex()]


def keytab_keys(keytab: bytes) -> list[bytes]:
    """The keys of an MIT keytab (format 0x0502: size-prefixed entries of principal,
    timestamp, version and key block)."""
    assert keytab[:2] == b"\x05\x02", keytab[:2]
    keys, at = [], 2
    while at + 4 <= len(keytab):
        size = int.from_bytes(keytab[at:at + 4], "big", signed=True)
        entry, at = keytab[at + 4:at + 4 + abs(size)], at + 4 + abs(size)
        if size <= 0:
            continue                       # a hole left by a removed entry
        components, pos = int.from_bytes(entry[:2], "big"), 2
        for _ in range(components + 1):    # the realm, then each component
            pos += 2 + int.from_bytes(entry[pos:pos + 2], "big")
        pos += 4 + 4 + 1 + 2               # name type, timestamp, version, key type
        length = int.from_bytes(entry[pos:pos + 2], "big")
        keys.append(entry[pos + 2:pos + 2 + length])
    return keys


def assert_no_secret_shown(secure: DockerCluster, app_id: str, keytab: bytes = b"") -> None:
    """No delegation token (in any of its written forms) and, given the keytab the
    application was shipped, none of its keys in the logs of the application's
    containers, nor in its web pages and REST answers."""
    tokens = container_tokens(secure, app_id)
    assert any(t.kind == "HDFS_DELEGATION_TOKEN" for t in tokens), tokens
    secrets = [form for t in tokens for form in [t.url_string(), *written_forms(t.password)]]
    keys = keytab_keys(keytab) if keytab else []
    assert not keytab or keys, "no key in the keytab"
    secrets += [form for key in keys for form in written_forms(key)] + (
        written_forms(keytab) if keytab else [])
    logs = ""
    for host in WORKERS:
        logs += secure.on(host, "sh", "-c", f"cat /data/nm/logs/{app_id}/*/* 2>/dev/null").stdout
    assert "yarnflow.appmaster" in logs or "ApplicationMaster" in logs, logs[-2000:]
    pages = "".join(json.dumps(secure.rest(f"/proxy/{app_id}/pages/yarnflow/{page}", "alice"))
                    for page in ("overview", "config", "jobmanager/config", "jobs/overview",
                                 "taskmanagers"))
    for text, where in ((logs, "the containers' logs"), (pages, "the web pages")):
        for secret in secrets:
            assert secret not in text, f"a delegation token or key appears in {where}"
        assert re.search(r"delegation=(?!<redacted>)", text) is None, where


# Each helper script leaves with os._exit once it has printed: pyarrow's Parquet reader
# over a Python file system can abort the interpreter's shutdown ("terminate called
# without an active exception", exit 134) after a correct read (apache/arrow#34314).
ROWS = """
import os, sys
from yarnflow.client import files
print(files.read_table(sys.argv[1]).num_rows, flush=True)
os._exit(0)
"""
SHAPES = "tests/yarn/pipelines/shapes.py"
LIFETIME_S = 60


def rows_at(secure: DockerCluster, path: str) -> int:
    read = secure.edge("python", "-c", ROWS, path, timeout=300)
    assert read.returncode == 0, read.stderr[-3000:]
    return int(read.stdout.split()[-1])


def web_overview(secure: DockerCluster, app_id: str) -> dict:
    """The ApplicationMaster's REST overview, through the ResourceManager's proxy, as
    the application's owner."""
    return secure.rest(f"/proxy/{app_id}/pages/yarnflow/overview", "alice")


@pytest.fixture(scope="module")
def short_lifetimes(secure: DockerCluster):
    """HDFS delegation tokens that live LIFETIME_S, for the tests that follow, the last
    of this module (a restart of the rm host). Not put back after them: the cluster
    goes down after this module, and `cluster up --secure` on a cluster that is kept
    restores Hadoop's lifetime itself."""
    done = subprocess.run([sys.executable, str(CLUSTER), "token-lifetime", str(LIFETIME_S)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, **secure.env})
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture
def short_tokens(short_lifetimes: None, alice: DockerCluster) -> DockerCluster:
    """alice's ticket on a cluster of short-lived tokens."""
    return alice


def test_a_session_with_a_keytab_runs_jobs_past_several_token_lifetimes(short_tokens):
    """Tokens that live a minute: the session's ApplicationMaster obtains new ones with
    the keytab it was shipped and sends them to its warm executors; jobs that read the
    last one's output from HDFS and write their own keep running, exactly, well past
    three lifetimes of the token the session started with."""
    secure = short_tokens
    keytab = "/etc/security/keytabs/alice.user.keytab"
    base = f"yarnflow-tests/renewal-{uuid.uuid4().hex[:8]}"
    started = secure.edge(
        "yarnflow", "session", "start", "--name", "renewing", "--min-executors", "2", *FAST,
        "-D", f"security.kerberos.login.keytab={keytab}",
        "-D", "security.kerberos.login.principal=alice@YARNFLOW.TEST",
        "-D", "security.delegation.tokens.renewal.time-ratio=0.5",
        "-D", "security.delegation.tokens.renewal.retry.backoff=5 s",
        "-D", "resourcemanager.taskmanager-timeout=1 h", timeout=600)
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    app_id = next(w for w in started.stdout.split() if w.startswith("application_"))
    began = time.monotonic()
    try:
        first = secure.edge("yarnflow", "run", "-t", "yarn-session", "-a", "renewing", "--attach",
                            "--no-progress", SHAPES, "--", "long", "--work", "0",
                            "--out", f"{base}/0", timeout=600)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        done = 0
        while time.monotonic() - began < 3 * LIFETIME_S or done < 3:
            renewals = web_overview(secure, app_id)["delegation-tokens"]["renewals"]
            wait_until(lambda: web_overview(secure, app_id)["delegation-tokens"]["renewals"]
                       > renewals, 3 * LIFETIME_S, "the session to obtain its next token",
                       interval=POLL_S)
            done += 1
            copy = secure.edge("yarnflow", "run", "-t", "yarn-session", "-a", "renewing",
                               "--attach", "--no-progress", SHAPES, "--", "copy",
                               "--parallelism", "2", "--input", f"{base}/{done - 1}",
                               "--out", f"{base}/{done}", timeout=600)
            assert copy.returncode == 0, copy.stdout[-3000:] + copy.stderr[-3000:]
        assert rows_at(secure, f"{base}/{done}") == 2000
        tokens = web_overview(secure, app_id)["delegation-tokens"]
        assert tokens["state"] == "valid" and tokens["renewals"] >= 3, tokens
        assert tokens["warning"] == ""
        # the keytab went to the ApplicationMaster: none of its keys is shown anywhere
        shipped = subprocess.run(["docker", "exec", "edge", "cat", keytab], capture_output=True,
                                 timeout=60, env={**os.environ, **secure.env})
        assert shipped.returncode == 0 and shipped.stdout, shipped.stderr
        assert_no_secret_shown(secure, app_id, keytab=shipped.stdout)
    finally:
        stopped = secure.edge("yarnflow", "session", "stop", "renewing", timeout=300)
        assert stopped.returncode == 0, stopped.stdout[-2000:] + stopped.stderr[-2000:]


def test_without_a_keytab_the_tokens_end_is_said_in_status_before_it_comes(short_tokens):
    secure = short_tokens
    base = f"yarnflow-tests/no-keytab-{uuid.uuid4().hex[:8]}"
    run = secure.edge("yarnflow", "run", "-t", "yarn-per-job", *FAST, SHAPES, "--", "long",
                      "--work", "20", "--out", f"{base}/out", timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    app_id = next(w for w in run.stdout.split() if w.startswith("application_"))
    try:
        last: list[str] = []

        def warned() -> str | None:
            status = secure.edge("yarnflow", "status", app_id, timeout=120)
            last[:] = [status.stdout[-2000:] + status.stderr[-1000:]]
            said = [line for line in status.stdout.splitlines() if line.startswith("warning:")]
            return said[0] if said else None
        try:
            line = wait_until(warned, 300, f"yarnflow status {app_id} to warn of the token's end",
                              interval=3.0)
        except AssertionError as timeout:
            # CI keeps no logs: what status said last, and YARN's report of the application
            report = secure.edge("yarn", "application", "-status", app_id, timeout=120)
            raise AssertionError(f"{timeout}; status said last:\n{''.join(last)}\n"
                                 f"YARN: {report.stdout[-2000:]}") from None
        assert "HDFS delegation token expires at" in line or "expired at" in line, line
        assert "security.kerberos.login.keytab" in line
    finally:
        secure.edge("yarn", "application", "-kill", app_id, timeout=120)
