"""Hadoop's secure mode for the dockerised cluster (`docker/cluster up --secure`):
a KDC host, the principals and keytabs made when it starts, and the settings that
turn on Kerberos in HDFS's and YARN's RPC and SASL on HDFS's data transfer (issue 35,
item 1). WebHDFS takes SPNEGO or a delegation token only (``hadoop.http.authentication``,
which Hadoop 3's WebHDFS filter reads); the ResourceManager's and NodeManagers' web
pages keep their default filters.

    kerberos.py kdc HOST...     # on the kdc host: make the realm, each HOST's service
                                # principals and keytab under /keytabs, then serve

Every host has the same krb5.conf (written at image build by host.py prepare). The
hosts carry fully qualified names, `rm.yarnflow-hadoop`, because Hadoop fills
`_HOST` in a server's principal with the name its client gets back from a reverse
lookup of the server's address, and Docker's DNS answers that with
`<container>.<network>`. Only the Python standard library.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REALM = "YARNFLOW.TEST"
DOMAIN = "yarnflow-hadoop"        # the cluster's network, which Docker's DNS uses as domain
KDC = f"kdc.{DOMAIN}"
KEYTABS = Path("/keytabs")        # on the kdc host: <host>.keytab each, then `ready`
HOST_KEYTAB = "/etc/security/keytabs/host.keytab"   # where each host finds its own
ADMIN = "yarnadmin"              # YARN's admin (yarn.admin.acl): may view and kill any application
USERS = ("alice", "bob", ADMIN)   # the edge host's users: the job's owner, another one, the admin
_SERVICES = {"rm": ("nn", "rm", "HTTP"), "edge": ()}
_WORKER_SERVICES = ("dn", "nm", "HTTP")

KRB5_CONF = f"""[libdefaults]
  default_realm = {REALM}
  dns_lookup_kdc = false
  dns_lookup_realm = false
  rdns = false
  dns_canonicalize_hostname = false
  udp_preference_limit = 1
  ticket_lifetime = 24h
  renew_lifetime = 7d
  forwardable = true

[realms]
  {REALM} = {{
    kdc = {KDC}
    admin_server = {KDC}
  }}

[domain_realm]
  .{DOMAIN} = {REALM}
  {DOMAIN} = {REALM}
"""

KDC_CONF = f"""[kdcdefaults]
  kdc_ports = 88
  kdc_tcp_ports = 88

[realms]
  {REALM} = {{
    database_name = /var/lib/krb5kdc/principal
    key_stash_file = /etc/krb5kdc/stash
    max_life = 24h
    max_renewable_life = 7d
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }}
"""


def user_keytab_name(user: str) -> str:
    """A user's keytab (``alice.user.keytab``): on the edge host, beside the host's, in
    ``/etc/security/keytabs``; what a user passes as security.kerberos.login.keytab."""
    return f"{user}.user.keytab"


def fqdn(host: str) -> str:
    return f"{host}.{DOMAIN}"


def service_principals(host: str) -> list[str]:
    """The principals whose keys ``host``'s keytab holds."""
    services = _SERVICES.get(host, _WORKER_SERVICES)
    return [f"{service}/{fqdn(host)}@{REALM}" for service in services]


def secure_properties(rm_host: str, keytab: str = HOST_KEYTAB,
                      token_lifetime_s: int = 0) -> dict[str, dict[str, str]]:
    """Per Hadoop XML file, what turns on Kerberos. Every daemon runs as root, so the
    service principals map to root; a user's principal maps to its first part. The
    ResourceManager and NameNode are named by their full name: a server logs in with
    `_HOST` taken from the address it serves.

    ``token_lifetime_s``: the HDFS delegation tokens' maximum lifetime (and renewal
    interval), Hadoop's 7 days (1 day) when 0. The ResourceManager has proxy-user
    privileges, as a cluster that runs long-lived applications gives it: it obtains
    new HDFS tokens for an application whose tokens reach their end, so YARN can
    still localize files for its new containers and aggregate its logs."""
    lifetime = {    # Hadoop's defaults stated: a restart with 0 puts them back
        "dfs.namenode.delegation.token.max-lifetime": str((token_lifetime_s or 7 * 86400) * 1000),
        "dfs.namenode.delegation.token.renew-interval": str((token_lifetime_s or 86400) * 1000),
    }
    nn, dn = f"nn/_HOST@{REALM}", f"dn/_HOST@{REALM}"
    http = f"HTTP/_HOST@{REALM}"
    rm = fqdn(rm_host)
    return {
        "core-site.xml": {
            "fs.defaultFS": f"hdfs://{rm}:9000",
            "hadoop.security.authentication": "kerberos",
            "hadoop.security.authorization": "false",
            "hadoop.rpc.protection": "authentication",
            "hadoop.security.auth_to_local":
                f"RULE:[2:$1@$0](.*@{REALM})s/.*/root/\nDEFAULT",
            # every web server, the ResourceManager's and its proxy's too, asks for
            # SPNEGO: the proxy must know who asks to apply an application's ACLs
            "hadoop.http.filter.initializers":
                "org.apache.hadoop.security.AuthenticationFilterInitializer",
            "hadoop.http.authentication.type": "kerberos",
            "hadoop.http.authentication.simple.anonymous.allowed": "false",
            "hadoop.http.authentication.kerberos.principal": http,
            "hadoop.http.authentication.kerberos.keytab": keytab,
            # the ResourceManager's principal acts as root here (the rule above)
            "hadoop.proxyuser.root.hosts": "*",
            "hadoop.proxyuser.root.groups": "*",
        },
        "hdfs-site.xml": {
            "dfs.namenode.http-address": f"{rm}:9870",
            "dfs.block.access.token.enable": "true",
            "dfs.namenode.kerberos.principal": nn,
            "dfs.namenode.keytab.file": keytab,
            "dfs.namenode.kerberos.internal.spnego.principal": http,
            "dfs.web.authentication.kerberos.principal": http,
            "dfs.web.authentication.kerberos.keytab": keytab,
            "dfs.datanode.kerberos.principal": dn,
            "dfs.datanode.keytab.file": keytab,
            # SASL on the data transfer protocol instead of privileged ports (jsvc)
            "dfs.data.transfer.protection": "authentication",
            "dfs.http.policy": "HTTP_ONLY",
            "ignore.secure.ports.for.testing": "true",
            **lifetime,
        },
        "yarn-site.xml": {
            "yarn.resourcemanager.hostname": rm,
            "yarn.resourcemanager.principal": f"rm/_HOST@{REALM}",
            "yarn.resourcemanager.keytab": keytab,
            "yarn.nodemanager.principal": f"nm/_HOST@{REALM}",
            "yarn.nodemanager.keytab": keytab,
            "yarn.resourcemanager.proxy-user-privileges.enabled": "true",
            # A secure NodeManager reads container logs only through Hadoop's native
            # library (SecureIOUtils), which Maven Central does not ship: aggregating
            # an application's logs would stop the NodeManager. They stay on each host.
            "yarn.log-aggregation-enable": "false",
            # applications' view and modify ACLs enforced; ADMIN may do anything
            "yarn.acl.enable": "true",
            "yarn.admin.acl": ADMIN,
        },
        "capacity-scheduler.xml": {       # a queue's administrators may kill its applications
            "yarn.scheduler.capacity.root.acl_administer_queue": ADMIN,
            "yarn.scheduler.capacity.root.default.acl_administer_queue": ADMIN,
        },
    }


def run(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"kerberos: {' '.join(cmd[:3])} failed: {(done.stdout + done.stderr)[-2000:]}")


def kdc(hosts: list[str]) -> None:
    """Make the realm and each host's keytab (and the users' on the edge host's), then
    run the KDC in the foreground: the container lives as long as it."""
    Path("/etc/krb5kdc").mkdir(parents=True, exist_ok=True)
    Path("/etc/krb5kdc/kdc.conf").write_text(KDC_CONF)
    run("kdb5_util", "create", "-s", "-r", REALM, "-P", "yarnflow-test-master")
    KEYTABS.mkdir(parents=True, exist_ok=True)
    for host in hosts:
        principals = service_principals(host) + (
            [f"{user}@{REALM}" for user in USERS] if host == "edge" else [])
        for principal in principals:
            run("kadmin.local", "-r", REALM, "-q", f"addprinc -randkey {principal}")
        if principals:
            run("kadmin.local", "-r", REALM, "-q",
                f"ktadd -k {KEYTABS / host}.keytab {' '.join(principals)}")
    for user in USERS:     # each user's own keytab too, with the same key (-norandkey)
        run("kadmin.local", "-r", REALM, "-q",
            f"ktadd -norandkey -k {KEYTABS / user_keytab_name(user)} {user}@{REALM}")
    (KEYTABS / "ready").write_text("\n".join(hosts) + "\n")
    print(f"kerberos: realm {REALM} made, keytabs for {', '.join(hosts)}", flush=True)
    os.execvp("krb5kdc", ["krb5kdc", "-n"])


def main() -> None:
    if sys.argv[1:2] == ["kdc"] and sys.argv[2:]:
        kdc(sys.argv[2:])
    else:
        sys.exit("usage: kerberos.py kdc HOST...")


if __name__ == "__main__":
    main()
