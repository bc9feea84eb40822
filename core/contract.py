"""What yarnflow's client, ApplicationMaster and TaskExecutors agree on inside a Skein
application: the environment variables a launch carries, the keys of Skein's
key-value store, and the Skein service name of each container size.

Small payloads travel in the launch environment rather than as localized files
because every localized file is one more upload to the cluster's file system
before YARN accepts the application (about 0.2 s each on the test cluster).
Environment values are base64: YARN's launch script does not keep quotes intact.
"""
from __future__ import annotations

import base64
import os
import re

from yarnflow.core.worker_spec import WorkerSpec

# Skein's key-value store keys the ApplicationMaster publishes.
APPMASTER_ADDRESS_KEY = "yarnflow.appmaster.address"
JOB_ID_KEY = "yarnflow.job.id"
# The route of the web monitor's page in Skein's web UI: the application's tracking URL
# followed by ``pages/<route>/``.
WEB_PAGE_ROUTE = "yarnflow"


def web_page_url(tracking_url: str) -> str:
    """The web monitor's page behind a YARN application's tracking URL."""
    return f"{tracking_url.rstrip('/')}/pages/{WEB_PAGE_ROUTE}/"

# The container-size plan (ApplicationMaster): base64 JSON list of {service, slot_cpu,
# slot_memory_mb, num_slots, overhead_mb, instances}.
SERVICES_ENV = "YARNFLOW_SERVICES"
# The configuration as JSON (ApplicationMaster and TaskExecutors).
CONF_ENV = "YARNFLOW_CONF"
# The serialized JobGraph when it is small enough for the environment (else job.pb).
JOB_ENV = "YARNFLOW_JOB"
# Linux refuses to exec with one environment string over 128 KiB (MAX_ARG_STRLEN);
# base64 grows a payload by 4/3, so a JobGraph up to 64 KiB fits with room to spare.
JOB_ENV_LIMIT = 64 * 1024
# The keytab the client ships to the ApplicationMaster only, on a Kerberos cluster with
# security.kerberos.login.keytab set: localized under this name (private to the
# application), for obtaining new delegation tokens before the old ones end.
KEYTAB_FILE = "yarnflow.keytab"



def encode(payload: bytes) -> str:
    return base64.b64encode(payload).decode()


def decode_env(name: str) -> bytes:
    value = os.environ.get(name)
    if value is None:
        raise RuntimeError(f"${name} is not set: this process runs only inside a Skein "
                           "container of a yarnflow application")
    return base64.b64decode(value)


def service_name(spec: WorkerSpec) -> str:
    """The Skein service of one container size. Skein service names allow letters,
    digits, ``-`` and ``_``: ``te-1x2c-3072m``."""
    return "te-" + re.sub(r"[^A-Za-z0-9_-]", "_", spec.name)
