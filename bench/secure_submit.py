"""`bench/yarn_submit.py --secure`: what Hadoop's secure mode costs a per-job
submission, on the dockerised cluster, and what a session's token renewal takes.
Prints one JSON object.

    python bench/yarn_submit.py --secure [--repeats 3] [--parallelism 2]

Both sides run the same job from the edge host (`bench/yarn_submit.py
--to-running-only`: submit until all 2N subtasks of a two-profile job are RUNNING,
by the JobMaster's own timestamps, median of --repeats): first on the cluster as
`cluster up` starts it, then as `cluster up --secure` starts it, with alice's ticket.
The two cannot alternate (the cluster is made again to switch), so each side is a
median of its own runs.

- insecure_s, secure_s, secure_over_insecure (goal: <= 1.3);
- renewal_ms: a session with a keytab, on tokens that live half a minute (`cluster
  token-lifetime 30`), obtaining a new token and handing it to its executors; the
  median of the ApplicationMaster's own figure over its first renewals (from its
  REST overview, through the ResourceManager's proxy, as alice).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "docker-hadoop" / "docker" / "cluster"
KEYTAB = "/etc/security/keytabs/alice.user.keytab"
PRINCIPAL = "alice@YARNFLOW.TEST"
ON_EDGE = ["env", "YARNFLOW_TEST_CLUSTER=given"]
# the ResourceManager's web by the name its HTTP principal carries on a secure cluster
RM_WEB = {False: "http://rm:8088", True: "http://rm.yarnflow-hadoop:8088"}
LIFETIME_S = 30
RENEWALS = 3


def cluster(*args: str, timeout: float = 2400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CLUSTER), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def up(*flags: str) -> dict[str, str]:
    proc = cluster("up", *flags)
    if proc.returncode != 0:
        sys.exit(f"cluster up {' '.join(flags)} failed:\n{proc.stderr[-3000:]}")
    return dict(line.removeprefix("export ").split("=", 1) for line in proc.stdout.splitlines()
                if line.startswith("export "))


def edge(*cmd: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    proc = cluster("edge", *cmd, timeout=timeout)
    if proc.returncode != 0:
        sys.exit(f"on the edge host, {' '.join(cmd[:4])} ... failed:\n"
                 f"{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    return proc


def to_running(repeats: int, n: int, secure: bool) -> float:
    proc = edge(*ON_EDGE, f"YARNFLOW_TEST_SECURE={int(secure)}",
                f"YARNFLOW_TEST_YARN_RM={RM_WEB[secure]}", "python",
                "bench/yarn_submit.py", "--to-running-only",
                "--repeats", str(repeats), "--parallelism", str(n))
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["to_running_s"])


def rest(env: dict[str, str], path: str) -> Any:
    """A ResourceManager page as alice (the secure cluster's web servers take SPNEGO
    only: `cluster web` asks from the edge host)."""
    answer = json.loads(cluster("web", "--as", "alice", env["YARNFLOW_TEST_YARN_RM"] + path,
                                timeout=120).stdout)[0]
    if answer["status"] != 200:
        sys.exit(f"{path}: HTTP {answer['status']}: {answer['body'][:300]}")
    return json.loads(answer["body"])


def renewal_ms(env: dict[str, str]) -> float:
    """The ApplicationMaster's time per renewal, over its first RENEWALS renewals."""
    cluster("token-lifetime", str(LIFETIME_S), timeout=600)
    try:
        started = edge("yarnflow", "session", "start", "--name", "bench-renewal",
                       "--min-executors", "2",
                       "-D", f"security.kerberos.login.keytab={KEYTAB}",
                       "-D", f"security.kerberos.login.principal={PRINCIPAL}",
                       "-D", "security.delegation.tokens.renewal.time-ratio=0.5",
                       "-D", "resourcemanager.taskmanager-timeout=1 h", timeout=600)
        app_id = next(w for w in started.stdout.split() if w.startswith("application_"))
        seen: dict[int, float] = {}
        deadline = time.monotonic() + (RENEWALS + 2) * LIFETIME_S
        while len(seen) < RENEWALS:
            if time.monotonic() > deadline:
                sys.exit(f"the session made {len(seen)} of {RENEWALS} token renewals in "
                         f"{(RENEWALS + 2) * LIFETIME_S} s")
            tokens = rest(env, f"/proxy/{app_id}/pages/yarnflow/overview")["delegation-tokens"]
            if tokens.get("renewals"):
                seen[tokens["renewals"]] = tokens["last-renewal-ms"]
            time.sleep(2.0)     # the renewals come every 15 s: a gentle poll
        edge("yarnflow", "session", "stop", "bench-renewal", timeout=300)
        return statistics.median(seen.values())
    finally:
        cluster("token-lifetime", "0", timeout=600)


def run_secure(repeats: int, n: int) -> None:
    up()
    insecure = to_running(repeats, n, secure=False)
    env = up("--secure")
    edge("kinit", "-kt", KEYTAB, PRINCIPAL)
    try:
        secure = to_running(repeats, n, secure=True)
        renewal = renewal_ms(env)
    finally:
        cluster("edge", "kdestroy")
    print(json.dumps({"insecure_s": round(insecure, 3), "secure_s": round(secure, 3),
                      "secure_over_insecure": round(secure / insecure, 3),
                      "renewal_ms": round(renewal, 1), "repeats": repeats,
                      "subtasks": 2 * n}))


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit("run it as: python bench/yarn_submit.py --secure")
