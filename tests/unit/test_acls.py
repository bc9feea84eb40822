"""Who else may view or kill an application (issue 35, item 5): yarn.view.acls and
yarn.modify.acls become Skein's ACLs. The secure cluster's test proves YARN and the web
UI enforce them; these prove what is asked for, and that a malformed ACL fails at -D."""
from __future__ import annotations

import pytest

from yarnflow.client.targets.acls import acl_parts, application_acls
from yarnflow.conf import ConfigError, Configuration


def config(*overrides: str) -> Configuration:
    return Configuration.load(overrides=list(overrides))


def test_hadoops_acl_form_splits_users_from_groups():
    assert acl_parts("alice,bob analysts,ops") == (["alice", "bob"], ["analysts", "ops"])
    assert acl_parts(" analysts") == ([], ["analysts"])
    assert acl_parts("carol") == (["carol"], [])
    assert acl_parts("") == ([], [])


@pytest.mark.parametrize("bad", ["alice bob carol", "alice,,bob", "alice, bob"])
def test_a_malformed_acl_is_refused_at_the_users_own_flag(bad):
    with pytest.raises(ConfigError, match="yarn.view.acls"):
        config(f"yarn.view.acls={bad}")


def test_an_insecure_cluster_without_acls_asks_for_none():
    assert application_acls(config(), kerberos=False, admin_acl="*").enable is False


def test_a_secure_cluster_restricts_the_web_ui_to_the_owner_viewers_and_admins():
    acls = application_acls(config("yarn.view.acls=carol analysts", "yarn.modify.acls=dave"),
                            kerberos=True, admin_acl="yarnadmin admins", owner="alice")
    assert acls.enable
    assert (acls.view_users, acls.view_groups) == (["carol"], ["analysts"])
    assert (acls.modify_users, acls.modify_groups) == (["dave"], [])
    # the owner too: Skein adds the account its ApplicationMaster runs as, which is the
    # NodeManager's where containers do not run as their user
    assert acls.ui_users == ["alice", "carol", "yarnadmin"]


def test_by_default_a_secure_cluster_lets_only_the_owner_and_admins_in():
    acls = application_acls(config(), kerberos=True, admin_acl="yarnadmin")
    assert acls.enable and acls.view_users == [] and acls.modify_users == []
    assert acls.ui_users == ["yarnadmin"]


@pytest.mark.parametrize("kerberos,admin_acl,view", [
    (True, "*", ""),                  # Hadoop's default: everyone is an admin
    (True, "yarnadmin", "*"),         # the user opened it to everyone
    (False, "yarnadmin", "carol"),    # no authenticated web: the proxy cannot tell who asks
])
def test_the_web_ui_stays_open_where_everyone_may_view_or_nobody_is_known(kerberos, admin_acl,
                                                                          view):
    acls = application_acls(config(f"yarn.view.acls={view}"), kerberos=kerberos,
                            admin_acl=admin_acl)
    assert acls.enable and acls.ui_users == ["*"]


def test_yarns_refused_kill_is_one_line_naming_who_and_the_fix():
    from yarnflow.client.targets.yarn_report import refused_kill
    said = refused_kill("application_1_0001", (
        "org.apache.hadoop.yarn.exceptions.YarnException: java.security.AccessControlException: "
        "User bob cannot perform operation MODIFY_APP on application_1_0001\n"
        "\tat org.apache.hadoop.yarn.ipc.RPCUtil.getRemoteException(RPCUtil.java:38)\n"))
    assert "\n" not in said
    assert said.startswith("YARN refuses to kill application_1_0001: User bob cannot perform "
                           "operation MODIFY_APP on application_1_0001. Fix:")
    assert "yarn.modify.acls" in said
    assert refused_kill("application_1_0001", "boom\nat x") == \
        "YARN refuses to kill application_1_0001: boom"
