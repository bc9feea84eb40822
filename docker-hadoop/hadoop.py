"""What both test clusters need to run Hadoop 3.5 from its Maven Central jars alone
(no tarball): the jars, the JDK 17 module flags, per-cluster overrides of the shared
XML files in conf/, the static web-app folders the HDFS daemons look for, and a
`yarn` command that answers Skein's `yarn classpath --glob`.

Used by native/cluster (daemons as processes of this machine) and by docker/cluster
and its images (a daemon per container host). Only the Python standard library, so
it runs before anything is installed and on hosts that have nothing but python3.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

HADOOP_VERSION = "3.5.0"
HERE = Path(__file__).resolve().parent
POM = HERE / "native" / "pom.xml"
SHARED_CONF = HERE / "conf"
# The test clusters' own classes (java/), one jar beside Hadoop's: a local file system
# that sets permission bits without forking `chmod` (there is no libhadoop.so here).
TESTCLUSTER_SOURCES = HERE / "java"
TESTCLUSTER_JAR = "yarnflow-testcluster.jar"
LOCAL_FS = "yarnflow.testcluster.NioChmodLocalFileSystem"
LOCAL_FS_PROPERTIES = {"fs.file.impl": LOCAL_FS, "fs.AbstractFileSystem.file.impl": f"{LOCAL_FS}$Fs"}

# What hadoop-functions.sh adds for JDK 17 (HADOOP-19219, HADOOP-19310) and a few
# more Netty needs; plain `java` has none of them.
JPMS_FLAGS = ["-XX:+IgnoreUnrecognizedVMOptions", "-Djava.net.preferIPv4Stack=true"] + [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED" for pkg in (
        "java.io", "java.lang", "java.lang.reflect", "java.lang.invoke", "java.math",
        "java.net", "java.nio", "java.text", "java.util", "java.util.concurrent",
        "java.util.concurrent.atomic", "java.util.zip", "sun.nio.ch", "sun.nio.cs",
        "sun.security.action", "sun.security.util", "sun.security.x509",
        "sun.util.calendar", "jdk.internal.ref")]

# Test hosts are small (CI: 2 cores for a whole cluster and the suite beside it), and
# their JVMs mostly start, idle and wait: the client compiler alone and the serial
# collector halve the CPU a JVM spends starting (NameNode -format: 4.2 -> 2.1 CPU-s)
# and leave no collector threads spinning per idle daemon. Tuning for a small
# machine, not a production setting.
SMALL_HOST_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
# Every JVM the clusters start: daemons, Hadoop's CLIs, and (through the
# NodeManager's JDK_JAVA_OPTIONS) containers' JVMs such as Skein's ApplicationMaster.
JVM_FLAGS = JPMS_FLAGS + SMALL_HOST_FLAGS

MAIN_CLASSES = {
    "namenode": "org.apache.hadoop.hdfs.server.namenode.NameNode",
    "datanode": "org.apache.hadoop.hdfs.server.datanode.DataNode",
    "resourcemanager": "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
    "nodemanager": "org.apache.hadoop.yarn.server.nodemanager.NodeManager",
}

YARN_SHIM = """#!/usr/bin/env bash
# Hadoop's `yarn` command for a jar-only cluster (written by docker-hadoop/hadoop.py).
# Skein's client runs `yarn classpath --glob`; the rest are Hadoop's own CLIs.
CONF=%(conf)s
LIB=%(lib)s
CP="$CONF:$LIB/*"
export JDK_JAVA_OPTIONS="%(jpms)s"
run() { exec "%(java)s" -Xmx256m -Dhadoop.log.dir=%(logs)s -Dlog4j.configuration=file:$CONF/log4j-cli.properties -cp "$CP" "$@"; }
case "$1" in
  classpath)
    if [ "$2" = "--glob" ]; then
      printf '%%s' "$CONF"; for j in "$LIB"/*.jar; do printf ':%%s' "$j"; done; echo
    else echo "$CP"; fi ;;
  application|applicationattempt|container) run org.apache.hadoop.yarn.client.cli.ApplicationCLI "$@" ;;
  logs) shift; run org.apache.hadoop.yarn.client.cli.LogsCLI "$@" ;;
  node) shift; run org.apache.hadoop.yarn.client.cli.NodeCLI "$@" ;;
  queue) shift; run org.apache.hadoop.yarn.client.cli.QueueCLI "$@" ;;
  rmadmin) shift; run org.apache.hadoop.yarn.client.cli.RMAdminCLI "$@" ;;
  fs) shift; run org.apache.hadoop.fs.FsShell "$@" ;;   # `hdfs dfs`, for the clusters' scripts
  version) run org.apache.hadoop.util.VersionInfo ;;
  *) echo "usage: yarn classpath [--glob] | application | applicationattempt | container | logs | node | queue | rmadmin | fs | version" >&2; exit 1 ;;
esac
"""

CLI_LOG4J = ("log4j.rootLogger=WARN,console\nlog4j.appender.console=org.apache.log4j.ConsoleAppender\n"
             "log4j.appender.console.target=System.err\n"
             "log4j.appender.console.layout=org.apache.log4j.PatternLayout\n"
             "log4j.appender.console.layout.ConversionPattern=%p %c{2}: %m%n\n")


def log(msg: str) -> None:
    print(f"cluster: {msg}", file=sys.stderr, flush=True)


def lib_dir(hadoop_home: Path) -> Path:
    """Where the jars go: the tarball's common/lib, which YARN's default
    yarn.application.classpath (Skein's ApplicationMaster) names."""
    return hadoop_home / "share" / "hadoop" / "common" / "lib"


def fetch_jars(hadoop_home: Path) -> Path:
    """Copy the server jars from Maven Central (through ~/.m2) once per pom.xml."""
    lib = lib_dir(hadoop_home)
    pom = POM.read_bytes()
    marker = hadoop_home / ".pom.xml"       # the pom the jars came from
    if marker.exists() and marker.read_bytes() == pom:
        return lib
    shutil.rmtree(lib, ignore_errors=True)
    if not shutil.which("mvn"):
        sys.exit("cluster: `mvn` not found. Fix: install Maven; it fetches the Hadoop jars from Maven Central.")
    lib.mkdir(parents=True, exist_ok=True)
    log(f"fetching Hadoop {HADOOP_VERSION} jars from Maven Central (cached in ~/.m2) ...")
    cmd = ["mvn", "-B", "-q", "-f", str(POM),
           "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
           "-DincludeScope=runtime", f"-DoutputDirectory={lib}",
           f"-Dhadoop.version={HADOOP_VERSION}"]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.exit(f"cluster: Maven could not fetch the Hadoop jars:\n{result.stdout[-3000:]}\n"
                 "Fix: check that Maven Central is reachable (proxy settings in ~/.m2/settings.xml).")
    marker.write_bytes(pom)
    return lib


def testcluster_jar(lib: Path, cache: Path) -> Path:
    """The test clusters' classes compiled against Hadoop's jars in ``lib``, once per
    source (cached in ``cache``)."""
    sources = sorted(TESTCLUSTER_SOURCES.glob("*.java"))
    digest = hashlib.sha256(b"".join(s.name.encode() + s.read_bytes() for s in sources))
    jar = cache / f"testcluster-{digest.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    java_home = os.environ.get("JAVA_HOME")
    javac = str(Path(java_home) / "bin" / "javac") if java_home else shutil.which("javac")
    if not javac or not Path(javac).exists():
        sys.exit("cluster: no `javac`. Fix: install a JDK 17 (not only the JRE), e.g. "
                 "apt-get install openjdk-17-jdk-headless")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        classes = Path(tmp) / "classes"
        made = subprocess.run([javac, "--release", "17", "-nowarn", "-d", str(classes), "-cp",
                               f"{lib}/*", *map(str, sources)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        if made.returncode != 0:
            sys.exit(f"cluster: compiling {TESTCLUSTER_SOURCES} failed:\n{made.stdout[-3000:]}")
        partial = Path(tmp) / TESTCLUSTER_JAR
        with zipfile.ZipFile(partial, "w") as z:
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        partial.rename(jar)
    return jar


def nodemanager_conf(conf: Path, into: Path) -> Path:
    """A copy of the configuration ``conf`` in ``into``, for a NodeManager to read itself:
    with a local file system that sets permission bits without forking `chmod` once per
    file it localizes (there is no libhadoop.so; docker-hadoop/README.md). Only the NodeManager reads it:
    its containers get the cluster's HADOOP_CONF_DIR, and a Spark JVM there has none of
    the test clusters' jars."""
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(conf, into)
    set_properties(into / "core-site.xml", LOCAL_FS_PROPERTIES)
    return into


def set_properties(path: Path, values: dict[str, str]) -> None:
    """Override properties of a Hadoop XML file (the shared files stay as committed)."""
    tree = ET.parse(path)
    root = tree.getroot()
    existing = {p.findtext("name"): p for p in root.findall("property")}
    for name, value in values.items():
        prop = existing.get(name)
        if prop is None:
            prop = ET.SubElement(root, "property")
            ET.SubElement(prop, "name").text = name
            ET.SubElement(prop, "value")
        prop.find("value").text = value   # type: ignore[union-attr]
    tree.write(path, encoding="utf-8", xml_declaration=True)


def copy_conf(conf: Path, source: Path = SHARED_CONF) -> Path:
    """The shared XML files into ``conf``, ready for this cluster's overrides."""
    conf.mkdir(parents=True, exist_ok=True)
    for f in source.iterdir():
        if f.is_file():
            shutil.copy(f, conf / f.name)
    (conf / "log4j-cli.properties").write_text(CLI_LOG4J)
    return conf


def write_webapps(root: Path) -> Path:
    """The HDFS daemons look for their (static) web apps on the classpath; the tarball
    ships them as directories, the jars do not. Empty ones are enough for the JMX and
    WebHDFS servlets the tests use."""
    for app in ("hdfs", "datanode", "secondary", "journal"):
        web_inf = root / "webapps" / app / "WEB-INF"
        web_inf.mkdir(parents=True, exist_ok=True)
        (web_inf / "web.xml").write_text('<?xml version="1.0"?>\n<web-app version="2.5"/>\n')
    return root


def write_yarn_command(bin_dir: Path, conf: Path, lib: Path, java: Path, logs: Path) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "yarn"
    shim.write_text(YARN_SHIM % {"conf": conf, "lib": lib, "jpms": " ".join(JVM_FLAGS),
                                 "java": java, "logs": logs})
    shim.chmod(0o755)
    return shim


def daemon_command(java: Path, name: str, heap: str, classpath: str, logs: Path,
                   args: list[str]) -> list[str]:
    """The `java` command line of one Hadoop daemon (``name`` as in MAIN_CLASSES, or a
    numbered one such as datanode2)."""
    kind = name.rstrip("0123456789")
    return [str(java), f"-Xmx{heap}", *JVM_FLAGS, f"-Dhadoop.log.dir={logs}",
            f"-Dyarn.log.dir={logs}", f"-Dhadoop.id.str={name}", "-cp", classpath,
            MAIN_CLASSES[kind], *args]


def format_namenode_command(java: Path, conf: Path, lib: Path) -> list[str]:
    return [str(java), "-Xmx256m", *JVM_FLAGS, "-cp", f"{conf}:{lib}/*", MAIN_CLASSES["namenode"],
            "-format", "-force", "-nonInteractive"]
