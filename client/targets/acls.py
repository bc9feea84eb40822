"""Who besides the owner may view or kill an application (Flink's yarn.view.acls and
yarn.modify.acls), as Skein's ACLs.

YARN enforces VIEW and MODIFY itself, for the owner, the listed users and groups, and
its admins. The web UI is Skein's to guard, through the ResourceManager's proxy, and
Skein admits users only, the owner always; YARN's admins are added by name so that an
admin who may kill the job may also look at it. Only a cluster whose web servers
authenticate (Kerberos) tells Skein who is asking: elsewhere the UI stays open, as
restricting it would lock out the owner too."""
from __future__ import annotations

from typing import Any

from yarnflow.conf import options
from yarnflow.conf.configuration import Configuration


def acl_parts(acl: str) -> tuple[list[str], list[str]]:
    """'alice,bob analysts' -> (['alice', 'bob'], ['analysts']); '*' is everyone."""
    users, _, groups = acl.partition(" ")
    return ([u for u in users.split(",") if u], [g for g in groups.split(",") if g])


def application_acls(config: Configuration, kerberos: bool, admin_acl: str,
                     owner: str = "") -> Any:
    """Skein's ACLs for a new application. Off (Skein's default, YARN's owner-and-admins
    rule still applies where YARN enables ACLs) unless the cluster is secure or the
    user named someone. ``owner``: the submitting user, named in the web UI's list
    because Skein's ApplicationMaster adds the account it runs as, which is not the
    owner where containers run as the NodeManager's user (DefaultContainerExecutor)."""
    import skein
    view, modify = config.get(options.YARN_VIEW_ACLS), config.get(options.YARN_MODIFY_ACLS)
    if not (kerberos or view or modify):
        return skein.ACLs()
    view_users, view_groups = acl_parts(view)
    modify_users, modify_groups = acl_parts(modify)
    admins, admin_groups = acl_parts(admin_acl)
    if not kerberos or "*" in view_users + view_groups + admins + admin_groups:
        ui_users = ["*"]
    else:
        ui_users = sorted(set(view_users + admins + ([owner] if owner else [])))
    return skein.ACLs(enable=True, view_users=view_users, view_groups=view_groups,
                      modify_users=modify_users, modify_groups=modify_groups, ui_users=ui_users)
