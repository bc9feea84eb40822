"""What a TaskExecutor learns from its YARN container: its Skein container id (the
resource id the ResourceManager expects), its node, its log directory, the
application's credentials, and — from Skein's key-value store — where the
ApplicationMaster is."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from yarnflow.core.ids import ResourceID
from yarnflow.conf import Configuration
from yarnflow.rpc.security import TlsCredentials, read_skein_container_credentials
from yarnflow.core.contract import APPMASTER_ADDRESS_KEY, CONF_ENV, decode_env
from yarnflow.rpc.skein_kv import wait_for_key


@dataclass
class ContainerEnvironment:
    resource_id: ResourceID
    host: str
    log_file: Path
    workdir: Path
    tls: TlsCredentials
    memory_mb: int          # what the container was given (Skein's service resources)
    vcores: int

    @classmethod
    def from_environment(cls) -> "ContainerEnvironment":
        resource_id = os.environ.get("SKEIN_CONTAINER_ID")
        if not resource_id:
            raise RuntimeError("SKEIN_CONTAINER_ID is not set: --yarn runs only inside a Skein "
                               "container of a yarnflow application")
        log_dir = Path((os.environ.get("LOG_DIRS") or ".").split(",")[0])
        return cls(ResourceID(resource_id), os.environ.get("NM_HOST", "127.0.0.1"),
                   log_dir / "taskexecutor.log", Path.cwd() / "work",
                   read_skein_container_credentials("."),
                   int(os.environ.get("SKEIN_RESOURCE_MEMORY", "0")),
                   int(os.environ.get("SKEIN_RESOURCE_VCORES", "0")))

    def check_fits(self, slots: int, slot_memory_mb: int) -> None:
        """Refuse to offer more slot memory than the container holds: YARN would kill
        the executor mid-job instead."""
        if self.memory_mb and slots * slot_memory_mb > self.memory_mb:
            raise RuntimeError(
                f"container {self.resource_id} has {self.memory_mb} MB but {slots} slots of "
                f"{slot_memory_mb} MB were asked for: the application's container plan is "
                "inconsistent; resubmit the job")


def find_appmaster(timeout: float) -> str:
    """The ApplicationMaster's address, from Skein's key-value store."""
    return wait_for_key(APPMASTER_ADDRESS_KEY, timeout,
                        "the ApplicationMaster's address (taskmanager.registration.timeout)").decode()


def launch_configuration() -> Configuration:
    """The job's configuration, which the client put in the launch environment."""
    return Configuration.from_json(decode_env(CONF_ENV).decode())
