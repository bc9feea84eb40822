"""The ApplicationMaster's delegation tokens (appmaster/resourcemanager/
delegation_tokens.py), on a manual clock: with a keytab a new token is obtained at
the configured share of the current one's life and handed out, a failed attempt is
retried after the backoff; without one the end is announced in one line in time."""
from __future__ import annotations

from concurrent.futures import Future

import pytest

from tests.unit.fakes import ManualMainThread
from yarnflow.appmaster.resourcemanager.delegation_tokens import (
    DelegationTokenManager, IllegalRenewalTransition, RenewalSettings, RenewalState,
    obtain_before_start)
from yarnflow.core.clock import ManualClock
from yarnflow.core.fs.tokens import (HDFS_KIND, DelegationIdentifier, HadoopToken,
                                     ProcessCredentials)

WALL = 1_800_000_000.0


def identifier(max_date_s: float) -> bytes:
    return DelegationIdentifier("alice", "yarn", "", int(WALL * 1000), int(max_date_s * 1000),
                                1).encode()


def container_token(max_date_s: float) -> HadoopToken:
    return HadoopToken(identifier(max_date_s), b"container", HDFS_KIND, "10.0.0.1:9000")


def sync(fn):
    future: Future = Future()
    try:
        future.set_result(fn())
    except Exception as err:  # noqa: BLE001 - kept in the future
        future.set_exception(err)
    return future


class Provider:
    def __init__(self, clock: ManualClock, lifetime_s: float) -> None:
        self.clock, self.lifetime_s = clock, lifetime_s
        self.failures = 0
        self.calls = 0

    def obtain(self) -> tuple[HadoopToken, float]:
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise ConnectionError("NameNode unreachable\nsecond line")
        token = HadoopToken(b"id-%d" % self.calls, b"pw-%d" % self.calls, "WEBHDFS delegation",
                            "10.0.0.1:9870")
        return token, self.clock.time() + self.lifetime_s


def manager(provider, credentials, settings=RenewalSettings(0.75, 30.0, 600.0)):
    main = ManualMainThread(ManualClock(wall=WALL))
    if provider is not None:
        provider.clock = main.clock
    handed: list[list[HadoopToken]] = []
    mgr = DelegationTokenManager(main, credentials, provider, settings, handed.append,
                                 run_blocking=sync)
    return main, mgr, handed


def test_with_a_keytab_tokens_are_renewed_at_the_ratio_of_their_life_and_handed_out():
    provider = Provider(ManualClock(), lifetime_s=400.0)
    credentials = ProcessCredentials([container_token(WALL + 1000)])
    main, mgr, handed = manager(provider, credentials)
    mgr.start()
    assert mgr.state is RenewalState.VALID and provider.calls == 1
    # the fresh token took the application token's name, so it replaces it everywhere
    [current] = credentials.tokens()
    assert (current.kind, current.service, current.password) == (HDFS_KIND, "10.0.0.1:9000", b"pw-1")
    assert handed == [[current]]
    main.advance(299.0)
    assert provider.calls == 1
    main.advance(1.0)                         # 0.75 of 400 s
    assert provider.calls == 2 and credentials.tokens()[0].password == b"pw-2"
    for _ in range(5):                        # several lifetimes
        main.advance(300.0)
    assert provider.calls == 7 and mgr.status().renewals == 7
    assert mgr.status().expires_at == pytest.approx(main.clock.time() + 400.0)
    assert mgr.status().warning == ""


def test_a_failed_renewal_is_retried_after_the_backoff():
    provider = Provider(ManualClock(), lifetime_s=400.0)
    provider.failures = 2
    main, mgr, handed = manager(provider, ProcessCredentials([container_token(WALL + 1000)]))
    mgr.start()
    assert mgr.state is RenewalState.RETRYING and handed == []
    main.advance(30.0)
    assert provider.calls == 2 and mgr.state is RenewalState.RETRYING
    main.advance(30.0)
    assert provider.calls == 3 and mgr.state is RenewalState.VALID and len(handed) == 1
    mgr.stop()
    main.advance(10_000.0)
    assert provider.calls == 3 and main.pending_timers() == 0
    with pytest.raises(IllegalRenewalTransition):
        mgr._transition(RenewalState.VALID)


def test_without_a_keytab_the_end_is_announced_in_one_line_before_it_comes(caplog):
    credentials = ProcessCredentials([container_token(WALL + 3600.0)])
    main, mgr, handed = manager(None, credentials)
    mgr.start()
    assert mgr.state is RenewalState.WATCHING and mgr.status().warning == ""
    assert mgr.status().expires_at == WALL + 3600.0
    main.advance(2999.0)
    assert mgr.status().warning == "" and not caplog.records
    main.advance(1.0)                          # 600 s before the end
    said = mgr.status().warning
    assert "expires at" in said and "security.kerberos.login.keytab" in said and "\n" not in said
    assert [r.getMessage() for r in caplog.records] == [said]
    main.advance(700.0)
    assert "expired at" in mgr.status().warning and handed == []
    assert len(caplog.records) == 1            # said once


def test_a_cluster_without_tokens_has_nothing_to_watch():
    main, mgr, _ = manager(None, ProcessCredentials([]))
    mgr.start()
    assert mgr.status().expires_at == 0 and mgr.status().warning == ""
    assert main.pending_timers() == 0


def test_the_warning_travels_with_a_live_jobs_details_and_is_shown():
    from rich.console import Console

    from yarnflow.client.display import print_summary
    from yarnflow.core.details import JobDetails
    from yarnflow.core.status import JobStatus
    from yarnflow.rpc.codec import job_details_from_proto, job_details_to_proto
    said = "the application's HDFS delegation token expires at 2027-01-01 00:00:00 UTC ..."
    details = JobDetails("job-1", "etl", JobStatus.RUNNING, warnings=[said])
    back = job_details_from_proto(job_details_to_proto(details))
    assert back.warnings == [said]
    console = Console(record=True, width=300)
    print_summary(back, console)
    assert f"warning: {said}" in console.export_text()


def test_with_a_keytab_a_fresh_token_is_in_hand_before_the_first_hdfs_call():
    """The ApplicationMaster may start on a token the NameNode already refuses (it
    waited for its container past the token's renewal interval): the keytab's token
    replaces it before anything reads HDFS; a NameNode that does not answer leaves the
    application's own in place, for the manager to try again."""
    provider = Provider(ManualClock(wall=WALL), lifetime_s=400.0)
    credentials = ProcessCredentials([container_token(WALL + 1000)])
    assert obtain_before_start(provider, credentials)
    [current] = credentials.tokens()
    assert (current.kind, current.service, current.password) == (HDFS_KIND, "10.0.0.1:9000", b"pw-1")
    provider.failures = 1
    assert not obtain_before_start(provider, credentials)
    assert credentials.tokens() == [current]
    assert not obtain_before_start(None, credentials)
