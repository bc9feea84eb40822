"""Who the client is to a secure cluster (issue 35, item 2).

A cluster in Hadoop's secure mode (``hadoop.security.authentication=kerberos``) takes
only authenticated calls. The client logs in as Flink's does: with a keytab and its
principal (``security.kerberos.login.keytab`` / ``…principal``), handed to Skein's
driver, or from the user's ticket cache (``security.kerberos.login.use-ticket-cache``,
after ``kinit``). Which of the two, and whether it can work, is decided before anything
is submitted: a user without credentials gets one line that names the fix, where
Hadoop's client would retry and Skein's driver answer UNAUTHENTICATED.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Callable

from yarnflow.core.hadoop_conf import HadoopConf
from yarnflow.client.targets.yarn_errors import YarnError
from yarnflow.conf import Configuration, options
from yarnflow.core.contract import KEYTAB_FILE

_KLIST_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class KerberosLogin:
    """How the client logs in; both empty: from the ticket cache."""
    principal: str = ""
    keytab: str = ""

    def skein_args(self) -> dict[str, str]:
        """What ``skein.Client`` takes to log its driver in."""
        return {"principal": self.principal, "keytab": self.keytab} if self.keytab else {}

    def appmaster_files(self) -> dict[str, Any]:
        """The keytab for the ApplicationMaster, which obtains new delegation tokens with
        it (Flink ships it the same way): Skein stages it in the application's own
        directory (mode 600 in a 700 directory) and removes it when the application
        ends. Executors never get it: the ApplicationMaster sends them tokens."""
        if not self.keytab:
            return {}
        import skein
        return {KEYTAB_FILE: skein.File(source=self.keytab, visibility="application")}


def secure(hadoop: HadoopConf) -> bool:
    return hadoop.kerberos


def ticket_cache_valid() -> bool | None:
    """Whether the user's ticket cache holds a ticket that has not expired (MIT's
    ``klist -s``); None when there is no ``klist`` to ask."""
    if shutil.which("klist") is None:
        return None
    try:
        return subprocess.run(["klist", "-s"], capture_output=True,
                              timeout=_KLIST_TIMEOUT_S).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return None


def ticket_principal() -> str:
    """The principal of the user's ticket cache (MIT's ``klist``'s "Default
    principal"); empty when there is none or no ``klist``."""
    if shutil.which("klist") is None:
        return ""
    try:
        listed = subprocess.run(["klist"], capture_output=True, text=True,
                                timeout=_KLIST_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for line in listed.stdout.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "default principal":
            return value.strip()
    return ""


def short_name(principal: str) -> str:
    """The user a principal acts as on the cluster: Hadoop's DEFAULT rule
    (``alice@REALM`` and ``alice/host@REALM`` are alice)."""
    return principal.split("@", 1)[0].split("/", 1)[0]


def cluster_user(config: Configuration,
                 principal_of_cache: Callable[[], str] = ticket_principal) -> str:
    """Who HDFS and YARN take this client for on a Kerberos cluster: the keytab's
    principal, else the ticket cache's, by short name (``/user/<name>`` is its home);
    empty when neither names one."""
    principal = config.get(options.KERBEROS_PRINCIPAL) if config.get(
        options.KERBEROS_KEYTAB) else ""
    if not principal and config.get(options.KERBEROS_USE_TICKET_CACHE):
        principal = principal_of_cache()
    return short_name(principal) if principal else ""


def kerberos_login(config: Configuration, hadoop: HadoopConf,
                   has_ticket: Callable[[], bool | None] = ticket_cache_valid
                   ) -> KerberosLogin | None:
    """The client's login to this cluster; None on a cluster without Kerberos. Raises
    ``YarnError``, naming the fix, when neither a keytab nor a ticket can serve."""
    principal = config.get(options.KERBEROS_PRINCIPAL)
    keytab = config.get(options.KERBEROS_KEYTAB)
    if not secure(hadoop):
        return None
    where = f"hadoop.security.authentication=kerberos in {hadoop.conf_dir}/core-site.xml"
    if keytab or principal:
        if not (keytab and principal):
            given, missing = ((options.KERBEROS_KEYTAB, options.KERBEROS_PRINCIPAL) if keytab
                              else (options.KERBEROS_PRINCIPAL, options.KERBEROS_KEYTAB))
            raise YarnError(f"{given.key} is set but {missing.key} is not; fix: set both (the "
                            "keytab and the principal it holds), or neither to use your ticket "
                            "cache")
        if not os.access(keytab, os.R_OK):
            raise YarnError(f"{options.KERBEROS_KEYTAB.key} {keytab} cannot be read; fix: name "
                            "a keytab file this user may read (e.g. made with ktutil or kadmin "
                            "xst)")
        return KerberosLogin(principal, keytab)
    if not config.get(options.KERBEROS_USE_TICKET_CACHE):
        raise YarnError(f"this cluster uses Kerberos ({where}) and "
                        f"{options.KERBEROS_USE_TICKET_CACHE.key} is off; fix: set "
                        f"{options.KERBEROS_KEYTAB.key} and {options.KERBEROS_PRINCIPAL.key}")
    if has_ticket() is False:
        raise YarnError(f"this cluster uses Kerberos ({where}) and your ticket cache holds no "
                        "valid ticket; fix: run kinit, or set "
                        f"{options.KERBEROS_KEYTAB.key} and {options.KERBEROS_PRINCIPAL.key}")
    return KerberosLogin()
