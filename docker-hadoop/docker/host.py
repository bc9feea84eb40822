"""One host of the dockerised cluster, inside its container (the image's command).

    host.py prepare                     # at image build: configuration, web apps, `yarn`
    host.py run namenode resourcemanager # the ResourceManager host
    host.py run nodemanager datanode     # a worker host: YARN and HDFS side by side
    host.py secure                      # the edge host of a secure cluster: its client conf

`run` starts each daemon as a child, forwards SIGTERM to them, reaps every process
that ends up parented to it (it is PID 1: YARN's containers are re-parented here
when their launch shells exit), and exits when any daemon exits, so the container
dies with its host's daemons as a machine would. With YARNFLOW_SECURE=1 (`cluster up
--secure`) it first turns Kerberos on (../kerberos.py). Only python3's standard library:
worker hosts have nothing else, as on a real cluster.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hadoop import (JVM_FLAGS, copy_conf, daemon_command,  # noqa: E402
                    format_namenode_command, lib_dir, nodemanager_conf, set_properties,
                    write_webapps, write_yarn_command)
from kerberos import HOST_KEYTAB, KRB5_CONF, secure_properties

HADOOP_HOME = Path("/opt/hadoop")
CONF = HADOOP_HOME / "etc" / "hadoop"
SHARED_CONF = HADOOP_HOME / "conf-shared"   # docker-hadoop/conf, copied in by the Dockerfile
LIB = lib_dir(HADOOP_HOME)
WEBAPPS = HADOOP_HOME / "webapps-root"
DATA = Path("/data")
LOGS = DATA / "logs"
JAVA = Path(os.environ.get("JAVA_HOME", "/opt/java")) / "bin" / "java"
RM_HOST = "rm"
BLOCK_SIZE = 1 << 20
TOKEN_LIFETIME = DATA / "token-lifetime"   # seconds, on the rm host (`cluster token-lifetime`)
HEAPS = {"namenode": "512m", "resourcemanager": "768m", "datanode": "256m", "nodemanager": "384m"}


def prepare() -> None:
    """The cluster's configuration, baked into the image: every host has the same files
    and tells itself apart by its hostname, as on a real cluster."""
    copy_conf(CONF, SHARED_CONF)
    set_properties(CONF / "yarn-site.xml", {
        "yarn.resourcemanager.hostname": RM_HOST,
        "yarn.nodemanager.local-dirs": str(DATA / "nm" / "local"),
        "yarn.nodemanager.log-dirs": str(DATA / "nm" / "logs"),
        "yarn.nodemanager.recovery.dir": str(DATA / "nm" / "recovery"),
        # a host that stops answering is LOST after 45 s: longer than the 30 s freeze
        # the tests expect nothing to fail from, far shorter than YARN's 10 minutes
        "yarn.nm.liveness-monitor.expiry-interval-ms": "45000",
        # a host brought back keeps what it localized (the shipped environment takes
        # minutes to localize on a busy 2-core machine) and its node id, as a
        # production NodeManager with work-preserving restart does
        "yarn.nodemanager.recovery.enabled": "true",
        "yarn.nodemanager.recovery.supervised": "true",
        "yarn.nodemanager.address": "0.0.0.0:45454",
    })
    set_properties(CONF / "core-site.xml", {"fs.defaultFS": f"hdfs://{RM_HOST}:9000",
                                            "hadoop.tmp.dir": str(DATA / "tmp")})
    set_properties(CONF / "hdfs-site.xml", {
        "dfs.namenode.name.dir": str(DATA / "namenode"),
        "dfs.datanode.data.dir": str(DATA / "dn"),
        "dfs.namenode.rpc-bind-host": "0.0.0.0",
        "dfs.namenode.http-address": f"{RM_HOST}:9870",
        "dfs.namenode.http-bind-host": "0.0.0.0",
        # two replicas: one lost host loses no block of the input
        "dfs.replication": "2",
        "dfs.blocksize": str(BLOCK_SIZE),
        # a DataNode that is gone counts as dead after ~50 s (2 x recheck + 10 heartbeats)
        "dfs.namenode.heartbeat.recheck-interval": "15000",
        "dfs.heartbeat.interval": "2",
        # ... and as stale after 8 s without a heartbeat: writes and reads avoid it from
        # then on (as clusters that run HBase set it), or a new block's pipeline through a
        # killed host waits ~15 s to connect until it is dead
        "dfs.namenode.stale.datanode.interval": "8000",
        "dfs.namenode.avoid.write.stale.datanode": "true",
        "dfs.namenode.avoid.read.stale.datanode": "true",
    })
    write_webapps(WEBAPPS)
    write_yarn_command(HADOOP_HOME / "bin", CONF, LIB, JAVA, LOGS)
    Path("/etc/krb5.conf").write_text(KRB5_CONF)   # used only by a secure cluster
    Path(HOST_KEYTAB).parent.mkdir(parents=True, exist_ok=True)


def make_secure() -> None:
    """A host of a secure cluster (`cluster up --secure`, YARNFLOW_SECURE=1): Kerberos on,
    with the keytab the cluster copied in before the host started; HDFS tokens as
    short-lived as TOKEN_LIFETIME says, if `cluster token-lifetime` wrote it."""
    lifetime = int(TOKEN_LIFETIME.read_text()) if TOKEN_LIFETIME.is_file() else 0
    for name, values in secure_properties(RM_HOST, token_lifetime_s=lifetime).items():
        set_properties(CONF / name, values)


def daemon_env() -> dict[str, str]:
    env = dict(os.environ)
    home = str(HADOOP_HOME)
    env.update({"HADOOP_CONF_DIR": str(CONF), "HADOOP_HOME": home, "HADOOP_COMMON_HOME": home,
                "HADOOP_HDFS_HOME": home, "HADOOP_YARN_HOME": home, "HADOOP_MAPRED_HOME": home,
                "JAVA_HOME": str(JAVA.parent.parent)})
    env.pop("CLASSPATH", None)
    return env


def daemon_conf(name: str) -> Path:
    """The configuration directory a daemon reads: the NodeManager's own copy
    (hadoop.nodemanager_conf says why), made as it starts, after make_secure."""
    if name != "nodemanager":
        return CONF
    return nodemanager_conf(CONF, DATA / "nodemanager-conf")


def start(name: str) -> subprocess.Popen[bytes]:
    LOGS.mkdir(parents=True, exist_ok=True)
    env = daemon_env()
    if name == "nodemanager":   # containers' JVMs (Skein's ApplicationMaster) need the flags
        env["JDK_JAVA_OPTIONS"] = " ".join(JVM_FLAGS)
    if name == "namenode" and not (DATA / "namenode" / "current").exists():
        subprocess.run(format_namenode_command(JAVA, CONF, LIB), check=True, env=env,
                       stdout=subprocess.DEVNULL)
    cmd = daemon_command(JAVA, name, HEAPS[name], f"{daemon_conf(name)}:{WEBAPPS}:{LIB}/*", LOGS, [])
    print(f"host: starting {name}", flush=True)
    return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)


def run(names: list[str]) -> int:
    if os.environ.get("YARNFLOW_SECURE") == "1":
        make_secure()
    daemons = {start(name).pid: name for name in names}

    def stop(signum: int, _frame: object) -> None:
        for pid in daemons:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        try:
            pid, status = os.wait()   # also reaps re-parented container processes
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if pid in daemons:
            print(f"host: {daemons[pid]} exited ({os.waitstatus_to_exitcode(status)})", flush=True)
            stop(signal.SIGTERM, None)
            return 1


def main() -> None:
    if sys.argv[1:2] == ["prepare"]:
        prepare()
    elif sys.argv[1:2] == ["secure"]:         # the edge host's client configuration
        make_secure()
    elif sys.argv[1:2] == ["run"] and sys.argv[2:] and set(sys.argv[2:]) <= set(HEAPS):
        sys.exit(run(sys.argv[2:]))
    else:
        sys.exit(f"usage: host.py prepare | secure | run {'|'.join(HEAPS)}...")


if __name__ == "__main__":
    main()
