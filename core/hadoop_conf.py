"""What yarnflow reads from the Hadoop configuration ($HADOOP_CONF_DIR): where YARN's
ResourceManager is and the largest container it grants (the client), and where its
node reports are (the ApplicationMaster, from the client's configuration that came
with the application: client/targets/appmaster_conf.py). Flink asks the
ResourceManager for the maximum; Skein does not expose that call, and the
scheduler's own setting in yarn-site.xml is the same number on every cluster we
target."""
from __future__ import annotations

import os
import re
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

# Hadoop's own defaults (yarn-default.xml) for what a site file may leave out.
_DEFAULTS = {
    "yarn.resourcemanager.hostname": "0.0.0.0",
    "yarn.resourcemanager.address": "${yarn.resourcemanager.hostname}:8032",
    "yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:8088",
    "yarn.scheduler.maximum-allocation-mb": "8192",
    "yarn.scheduler.maximum-allocation-vcores": "4",
    "yarn.resourcemanager.am.max-attempts": "2",
    "yarn.admin.acl": "*",
}
_VAR = re.compile(r"\$\{([^}]+)\}")


class HadoopConfigError(RuntimeError):
    pass


@dataclass
class HadoopConf:
    values: dict[str, str]
    conf_dir: Path

    @classmethod
    def load(cls) -> "HadoopConf":
        conf_dir = os.environ.get("HADOOP_CONF_DIR") or (
            os.path.join(os.environ["HADOOP_HOME"], "etc", "hadoop")
            if os.environ.get("HADOOP_HOME") else "")
        if not conf_dir or not Path(conf_dir, "yarn-site.xml").exists():
            where = (f"{conf_dir} holds no yarn-site.xml" if conf_dir
                     else "HADOOP_CONF_DIR and HADOOP_HOME are unset")
            raise HadoopConfigError(
                f"no YARN configuration found: {where}. Fix: export HADOOP_CONF_DIR "
                "to your cluster's configuration directory (for the test cluster: "
                "eval \"$(docker-hadoop/native/cluster up)\")")
        values = dict(_DEFAULTS)
        for name in ("core-site.xml", "hdfs-site.xml", "yarn-site.xml"):
            path = Path(conf_dir, name)
            if path.exists():
                for prop in ET.parse(path).getroot().iter("property"):
                    key, value = prop.findtext("name"), prop.findtext("value")
                    if key and value is not None:
                        values[key.strip()] = value.strip()
        return cls(values, Path(conf_dir))

    def get(self, key: str) -> str:
        value = self.values.get(key, "")
        for _ in range(10):          # Hadoop's ${var} substitution, bounded like Hadoop's
            expanded = _VAR.sub(lambda m: self.values.get(m.group(1), os.environ.get(
                m.group(1), m.group(0))), value)
            if expanded == value:
                break
            value = expanded
        return value

    @property
    def rm_address(self) -> str:
        return self.get("yarn.resourcemanager.address")

    @property
    def rm_webapp_address(self) -> str:
        """host:port of the ResourceManager's web services (its node reports)."""
        return self.get("yarn.resourcemanager.webapp.address")

    @property
    def kerberos(self) -> bool:
        """Hadoop's secure mode: ``hadoop.security.authentication=kerberos``."""
        return self.get("hadoop.security.authentication").strip().lower() == "kerberos"

    @property
    def default_fs(self) -> str:
        return self.get("fs.defaultFS") or "file:///"

    def namenode_http_address(self, authority: str = "") -> str:
        """The HTTP (WebHDFS) address of the NameNode at RPC ``authority`` (default:
        fs.defaultFS's), with a wildcard bind address replaced by the NameNode's host."""
        http = self.get("dfs.namenode.http-address") or "0.0.0.0:9870"
        host, _, port = http.rpartition(":")
        if host in ("", "0.0.0.0"):
            host = (authority or urlparse(self.default_fs).netloc).rsplit(":", 1)[0]
        return f"{host}:{port}"

    @property
    def max_allocation(self) -> tuple[int, int]:
        """(memory MB, vcores) of the largest container the scheduler grants."""
        return (int(self.get("yarn.scheduler.maximum-allocation-mb")),
                int(self.get("yarn.scheduler.maximum-allocation-vcores")))

    @property
    def admin_acl(self) -> str:
        """YARN's admins ('users groups'), who may view and kill every application."""
        return self.get("yarn.admin.acl")

    @property
    def max_am_attempts(self) -> int:
        """The most ApplicationMaster attempts YARN gives any application."""
        return int(self.get("yarn.resourcemanager.am.max-attempts"))

    def check_rm_reachable(self, timeout: float) -> None:
        """Fail fast, naming the address, when nothing listens there: Hadoop's client
        would retry for minutes before saying anything."""
        host, _, port = self.rm_address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=min(timeout, 5.0)):
                return
        except OSError as err:
            raise HadoopConfigError(
                f"YARN ResourceManager at {self.rm_address} is unreachable ({err}). Fix: start "
                f"the cluster, or point HADOOP_CONF_DIR (now {self.conf_dir}) at the right "
                "one") from None
