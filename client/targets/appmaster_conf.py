"""The Hadoop configuration of Skein's ApplicationMaster (the JVM beside ours in the
application's first container): the client's own, as Spark ships its configuration to
its ApplicationMaster, with the NodeManager client bounded.

Why: Skein starts every container of the application from one thread (its launch pool
has no core threads and an unbounded queue, so it never grows past one). A host that
dies while a container starts on it holds that thread in Hadoop's NodeManager client:
up to ``yarn.client.nodemanager-connect.max-wait-ms`` (3 min) of reconnecting, each
attempt retrying its connect ``ipc.client.connect.max.retries`` times, and an RPC to a
host that froze mid-call waits ``ipc.client.rpc-timeout.ms`` (2 min). Every other
container of the application, on healthy hosts, waits behind it, and its executors
miss their start timeouts. Bounded to ``yarn.appmaster.nodemanager-timeout``, a start
on a dead host fails in about that long and the queue moves on.

The configuration travels as an archive localized into the ApplicationMaster's
container, and ``HADOOP_CONF_DIR`` points Skein's classpath there (YARN lets a
container set it). Only the site files go: core, HDFS, YARN and resource types; no
other file of the client's configuration directory leaves the client.
"""
from __future__ import annotations

import hashlib
import io
import os
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

from yarnflow.core.hadoop_conf import HadoopConf, HadoopConfigError
from yarnflow.conf import Configuration, options

ARCHIVE_NAME = "yarnflow-hadoop-conf"
SITE_FILES = ("core-site.xml", "hdfs-site.xml", "yarn-site.xml", "resource-types.xml")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "yarnflow" / "appmaster-conf"


def bounded_properties(config: Configuration) -> dict[str, str]:
    """What Skein's ApplicationMaster's NodeManager client may wait, at most."""
    wait_ms = int(config.get(options.YARN_AM_NODEMANAGER_TIMEOUT) * 1000)
    return {
        "yarn.client.nodemanager-connect.max-wait-ms": str(wait_ms),
        "yarn.client.nodemanager-connect.retry-interval-ms": str(max(1000, wait_ms // 6)),
        "ipc.client.rpc-timeout.ms": str(wait_ms),
        "ipc.client.connect.timeout": str(min(20000, max(1000, wait_ms // 3))),
        "ipc.client.connect.max.retries": "1",
        "ipc.client.connect.max.retries.on.timeouts": "1",
    }


def with_properties(site_xml: bytes, properties: dict[str, str]) -> bytes:
    """``site_xml`` with ``properties`` set (replacing what it says of them)."""
    root = ET.fromstring(site_xml)
    for prop in list(root.iter("property")):
        if (prop.findtext("name") or "").strip() in properties:
            root.remove(prop)
    for name, value in properties.items():
        prop = ET.SubElement(root, "property")
        ET.SubElement(prop, "name").text = name
        ET.SubElement(prop, "value").text = value
    written: bytes = ET.tostring(root, xml_declaration=True, encoding="utf-8")
    return written


def appmaster_conf_archive(config: Configuration, conf_dir: Path) -> bytes:
    """The site files of ``conf_dir`` (yarn-site.xml bounded) as a zip archive."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in SITE_FILES:
            path = conf_dir / name
            if not path.is_file():
                continue
            data = path.read_bytes()
            if name == "yarn-site.xml":
                data = with_properties(data, bounded_properties(config))
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def appmaster_conf(config: Configuration) -> tuple[dict[str, Any], dict[str, str]]:
    """The ApplicationMaster's files and environment for its Hadoop configuration;
    nothing when the client has none to ship (the cluster's own is used then)."""
    import skein
    try:
        hadoop = HadoopConf.load()
    except HadoopConfigError:
        return {}, {}
    data = appmaster_conf_archive(config, hadoop.conf_dir)
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{hashlib.sha256(data).hexdigest()[:32]}.zip"
    if not path.exists():          # named by its content: written once, whole
        with tempfile.NamedTemporaryFile(dir=CACHE, delete=False) as out:
            out.write(data)
        os.replace(out.name, path)
    return ({ARCHIVE_NAME: skein.File(source=str(path), type="archive")},
            {"HADOOP_CONF_DIR": ARCHIVE_NAME})
