"""Delegation tokens that outlive their lifetime (Flink's DelegationTokenManager).

On a Kerberos cluster a YARN application lives on the HDFS delegation token its
client obtained. YARN renews it for the application until its maximum lifetime
(``dfs.namenode.delegation.token.max-lifetime``, 7 days by default); after that every
read and write of the application fails. A session lives longer than that.

With a keytab (``security.kerberos.login.keytab``, shipped to the ApplicationMaster
only), the manager obtains a new token before the current one expires, at
``security.delegation.tokens.renewal.time-ratio`` of its remaining life, and hands
it to the ResourceManager, which sends it to every TaskExecutor and to each new one
as it registers. A failed attempt is retried after
``security.delegation.tokens.renewal.retry.backoff``. Without a keytab it only
watches: once the token's end is nearer than
``security.delegation.tokens.expiry-warning``, it says so in one line, in the log and
in ``yarnflow status``.

The manager lives on the ResourceManager's main thread; the one blocking call (the
NameNode's answer) runs on a thread of its own and reports back there.
"""
from __future__ import annotations

import enum
import logging
import time
from concurrent.futures import Future
from typing import Callable, Protocol, TypeVar

from yarnflow.appmaster.resourcemanager.settings import RenewalSettings
from yarnflow.core.fs.tokens import HDFS_KIND, HadoopToken, ProcessCredentials
from yarnflow.core.messages import TokenStatus
from yarnflow.rpc.endpoint import MainThreadExecutor, ScheduledTask, run_on_thread

log = logging.getLogger(__name__)
T = TypeVar("T")


class TokenProvider(Protocol):
    """Obtains a fresh HDFS delegation token, and when it expires (epoch seconds)."""

    def obtain(self) -> tuple[HadoopToken, float]: ...


class KeytabTokenProvider:
    """New HDFS delegation tokens from the NameNode's WebHDFS, asked for with SPNEGO as
    the keytab's principal (the application's owner), with itself as the renewer so
    that the NameNode tells when the token ends."""

    def __init__(self, http_address: str, principal: str, keytab: str, timeout: float) -> None:
        self.http_address = http_address
        self.principal = principal
        self.keytab = keytab
        self.timeout = timeout

    def obtain(self) -> tuple[HadoopToken, float]:
        from yarnflow.core.fs.webhdfs import keytab_spnego, obtain_delegation_token
        renewer = self.principal.split("@", 1)[0].split("/", 1)[0]
        return obtain_delegation_token(self.http_address,
                                       keytab_spnego(self.principal, self.keytab), renewer,
                                       self.timeout)


class RenewalState(enum.Enum):
    WATCHING = "watching"        # no keytab: the container's tokens, watched until they end
    OBTAINING = "obtaining"
    VALID = "valid"
    RETRYING = "retrying"        # the last attempt failed; the next one is scheduled
    STOPPED = "stopped"


_ALLOWED = {
    RenewalState.WATCHING: {RenewalState.STOPPED},
    RenewalState.OBTAINING: {RenewalState.VALID, RenewalState.RETRYING, RenewalState.STOPPED},
    RenewalState.VALID: {RenewalState.OBTAINING, RenewalState.STOPPED},
    RenewalState.RETRYING: {RenewalState.OBTAINING, RenewalState.STOPPED},
    RenewalState.STOPPED: set(),
}


class IllegalRenewalTransition(RuntimeError):
    pass


def _obtain_on_thread(call: Callable[[], T]) -> "Future[T]":
    return run_on_thread(call, "delegation-token-obtain")


class DelegationTokenManager:
    def __init__(self, main: MainThreadExecutor, credentials: ProcessCredentials,
                 provider: TokenProvider | None, settings: RenewalSettings,
                 on_tokens: Callable[[list[HadoopToken]], None],
                 run_blocking: Callable[[Callable[[], tuple[HadoopToken, float]]],
                                        "Future[tuple[HadoopToken, float]]"] = _obtain_on_thread
                 ) -> None:
        self._main = main
        self._credentials = credentials
        self._provider = provider
        self._settings = settings
        self._on_tokens = on_tokens
        self._run_blocking = run_blocking
        self.state = RenewalState.WATCHING if provider is None else RenewalState.OBTAINING
        self._expires_at = 0.0
        self._renewals = 0
        self._last_renewal_ms = 0.0
        self._warned = False
        self._timer: ScheduledTask | None = None

    # --- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self._expires_at = self._container_token_end()
        if self._provider is None:
            self._check_expiry()
        else:
            self._obtain()

    def stop(self) -> None:
        if self.state is RenewalState.STOPPED:
            return
        self._transition(RenewalState.STOPPED)
        if self._timer is not None:
            self._timer.cancel()

    def status(self) -> TokenStatus:
        return TokenStatus(self.state.value, self._expires_at, self._renewals,
                           self._last_renewal_ms, self.warning())

    # --- without a keytab ----------------------------------------------------------------
    def warning(self) -> str:
        if self._provider is not None or not self._expires_at:
            return ""
        left = self._expires_at - self._main.clock.time()
        if left > self._settings.expiry_warning_s:
            return ""
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self._expires_at))
        verb = "expired" if left <= 0 else "expires"
        return (f"the application's HDFS delegation token {verb} at {when} and cannot be "
                "renewed past it: this application then can no longer read or write HDFS; "
                "fix: start it with security.kerberos.login.keytab and "
                "security.kerberos.login.principal, so that it obtains new tokens itself")

    def _check_expiry(self) -> None:
        if self.state is not RenewalState.WATCHING or not self._expires_at:
            return
        said = self.warning()
        if said and not self._warned:
            self._warned = True
            log.warning("%s", said)
        if not self._warned:
            left = self._expires_at - self._main.clock.time() - self._settings.expiry_warning_s
            self._timer = self._main.schedule(max(1.0, left), self._check_expiry)

    def _container_token_end(self) -> float:
        """The earliest maximum date of the container's HDFS tokens (epoch seconds)."""
        ends = [ident.max_date_ms / 1000.0 for token in self._credentials.tokens()
                if token.kind == HDFS_KIND and (ident := token.delegation) is not None]
        return min(ends) if ends else 0.0

    # --- with a keytab -------------------------------------------------------------------
    def _obtain(self) -> None:
        if self.state is RenewalState.STOPPED:
            return
        if self.state is not RenewalState.OBTAINING:
            self._transition(RenewalState.OBTAINING)
        started = self._main.clock.monotonic()
        provider = self._provider
        assert provider is not None
        self._run_blocking(provider.obtain).add_done_callback(
            lambda done: self._main.execute(self._obtained, done, started))

    def _obtained(self, done: "Future[tuple[HadoopToken, float]]", started: float) -> None:
        if self.state is RenewalState.STOPPED:
            return
        try:
            token, expires_at = done.result()
        except Exception as err:   # noqa: BLE001 - any failure to obtain: retried later
            self._transition(RenewalState.RETRYING)
            log.warning("obtaining a new HDFS delegation token failed (%s); trying again in "
                        "%.0f s", str(err).splitlines()[0] if str(err) else type(err).__name__,
                        self._settings.retry_backoff_s)
            self._timer = self._main.schedule(self._settings.retry_backoff_s, self._obtain)
            return
        fresh = self._as_current(token)
        self._credentials.update([fresh])
        self._on_tokens([fresh])
        self._expires_at = expires_at
        self._renewals += 1
        self._last_renewal_ms = (self._main.clock.monotonic() - started) * 1000.0
        self._transition(RenewalState.VALID)
        delay = max(1.0, (expires_at - self._main.clock.time()) * self._settings.time_ratio)
        log.info("obtained a new HDFS delegation token (renewal %d, %.0f ms), valid until %s; "
                 "the next in %.0f s", self._renewals, self._last_renewal_ms,
                 time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires_at)), delay)
        self._timer = self._main.schedule(delay, self._obtain)

    def _as_current(self, token: HadoopToken) -> HadoopToken:
        return as_current(token, self._credentials)

    def _transition(self, to: RenewalState) -> None:
        if to not in _ALLOWED[self.state]:
            raise IllegalRenewalTransition(f"delegation tokens cannot go from {self.state.value} "
                                           f"to {to.value}")
        self.state = to


def as_current(token: HadoopToken, credentials: ProcessCredentials) -> HadoopToken:
    """The new token under the name the application's own HDFS token has (WebHDFS
    calls its tokens by another kind and its HTTP address), so that it takes that
    token's place everywhere; the NameNode reads only its identifier and password."""
    own = [t for t in credentials.tokens() if t.kind == HDFS_KIND]
    service = own[0].service if own else token.service
    return HadoopToken(token.identifier, token.password, HDFS_KIND, service)


def obtain_before_start(provider: TokenProvider | None, credentials: ProcessCredentials) -> bool:
    """With a keytab, a fresh HDFS token before the ApplicationMaster's first HDFS call.

    YARN renews the client's token only from submission on, so an ApplicationMaster
    that waited for its container longer than the token's renewal interval (a cold
    cluster, a queue) starts on a token the NameNode already refuses; its first read
    of the history directory then fails. Blocking, once, before the components start;
    a failure is logged and left to the manager, which tries again with its backoff."""
    if provider is None:
        return False
    try:
        token, expires_at = provider.obtain()
    except Exception as err:   # noqa: BLE001 - the container's tokens may still serve
        log.warning("could not obtain a fresh HDFS delegation token before starting (%s); "
                    "going on with the application's own", str(err).splitlines()[0]
                    if str(err) else type(err).__name__)
        return False
    credentials.update([as_current(token, credentials)])
    log.info("obtained a fresh HDFS delegation token before the first HDFS call, valid until %s",
             time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires_at)))
    return True


class TokenDistribution:
    """Which TaskExecutor holds which renewal. Each renewal goes to every executor; one
    that registers later gets the current one at once; a send that failed or was lost
    is sent again on the executor's next heartbeat (reconciled, not trusted)."""

    def __init__(self) -> None:
        self._tokens: list[HadoopToken] = []
        self._version = 0
        self._holds: dict[str, int] = {}
        self._sending: dict[str, int] = {}

    def renewed(self, tokens: list[HadoopToken]) -> None:
        self._tokens = list(tokens)
        self._version += 1

    def sync(self, resource_id: str, gateway: "TokenReceiver",
             main: MainThreadExecutor) -> None:
        """Send the current tokens to the executor unless it has them or they are on
        their way."""
        version = self._version
        if not version or self._holds.get(resource_id, 0) >= version or \
                self._sending.get(resource_id) == version:
            return
        self._sending[resource_id] = version

        def sent(done: "Future[None]") -> None:
            main.execute(self._sent, resource_id, version, done)
        gateway.update_delegation_tokens(self._tokens).add_done_callback(sent)

    def _sent(self, resource_id: str, version: int, done: "Future[None]") -> None:
        if self._sending.get(resource_id) == version:
            del self._sending[resource_id]
        if done.exception() is None:
            self._holds[resource_id] = max(self._holds.get(resource_id, 0), version)
        else:
            log.warning("TaskExecutor %s did not take the renewed delegation tokens (%s); "
                        "sending them again on its next heartbeat", resource_id,
                        type(done.exception()).__name__)

    def forget(self, resource_id: str) -> None:
        self._holds.pop(resource_id, None)
        self._sending.pop(resource_id, None)

    def holds_current(self, resource_id: str) -> bool:
        return self._holds.get(resource_id, 0) >= self._version


class TokenReceiver(Protocol):
    def update_delegation_tokens(self, tokens: list[HadoopToken]) -> "Future[None]": ...
