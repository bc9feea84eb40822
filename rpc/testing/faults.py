"""Lost, repeated and late messages on purpose: a gRPC client interceptor that drops,
duplicates or delays chosen calls between components, so the tests can show that
every message FLIP-6 lists as lossy (seed 004: slot requests, registrations, offers,
slot reports and their answers) is retried or reconciled.

It is configured by the test-only options ``test.rpc.faults`` and
``test.rpc.faults.seed`` of the cluster's own configuration (the ApplicationMaster's
and, through it, its TaskExecutors'); a job's ``-D`` never reaches the RPC layer of a
session. Rules are ``;``-separated, each ``<method>=<action>[:<probability>[:<times>]]``:

- ``<method>``: a gRPC method's name (``RequestSlot``, ``OfferSlots``,
  ``RegisterTaskExecutor``, ...), optionally with its service
  (``JobMaster/OfferSlots``), or ``*`` for every call;
- ``<action>``: ``drop`` (the request never arrives), ``drop-answer`` (it arrives and
  is served, but the answer is lost), ``duplicate`` (it arrives twice), or
  ``delay@<seconds>``;
- ``<probability>`` (default 1) of each matching call, drawn from a generator seeded
  with ``test.rpc.faults.seed``; ``<times>``: at most that many injections (default:
  no limit).

An injected loss fails the call as an unreachable peer would (UNAVAILABLE for a lost
request, DEADLINE_EXCEEDED for a lost answer), so callers cannot tell it from a real
one."""
from __future__ import annotations

import logging
import random
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

import grpc

log = logging.getLogger(__name__)

ACTIONS = ("drop", "drop-answer", "duplicate", "delay")


class InjectedFailure(grpc.RpcError, grpc.Call, grpc.Future):   # type: ignore[misc]
    """A call the fault injector failed: an RpcError with a status code, and also the
    call-and-future object an interceptor must return."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code, self._details = code, details

    # grpc.RpcError / grpc.Call
    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def initial_metadata(self) -> Any:
        return ()

    def trailing_metadata(self) -> Any:
        return ()

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> float | None:
        return None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        return False

    # grpc.Future, already failed
    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def result(self, timeout: float | None = None) -> Any:
        raise self

    def exception(self, timeout: float | None = None) -> BaseException:
        return self

    def traceback(self, timeout: float | None = None) -> Any:
        return None

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        fn(self)


class _LaterOutcome(grpc.Call, grpc.Future):   # type: ignore[misc]
    """The outcome of a call the injector answers later (a delayed call, a lost
    answer): a grpc call-and-future backed by a plain Future."""

    def __init__(self) -> None:
        self._future: Future[Any] = Future()

    def settle_from(self, call: Any, lose_answer: bool) -> None:
        def done(finished: Any) -> None:
            if lose_answer:
                self._future.set_exception(InjectedFailure(
                    grpc.StatusCode.DEADLINE_EXCEEDED, "injected fault: the answer was lost"))
                return
            try:
                self._future.set_result(finished.result())
            except Exception as err:   # noqa: BLE001 - the call's own failure, passed on
                self._future.set_exception(err)
        call.add_done_callback(done)

    def fail(self, err: BaseException) -> None:
        self._future.set_exception(err)

    def _error(self) -> Any:
        return self._future.exception() if self._future.done() else None

    def code(self) -> Any:
        err = self._error()
        return err.code() if err is not None and hasattr(err, "code") else grpc.StatusCode.OK

    def details(self) -> str:
        err = self._error()
        return err.details() if err is not None and hasattr(err, "details") else ""

    def initial_metadata(self) -> Any:
        return ()

    def trailing_metadata(self) -> Any:
        err = self._error()
        return err.trailing_metadata() if err is not None and hasattr(err, "trailing_metadata") \
            else ()

    def is_active(self) -> bool:
        return not self._future.done()

    def time_remaining(self) -> float | None:
        return None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        self._future.add_done_callback(lambda _: callback())
        return True

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return not self._future.done()

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> Any:
        return self._future.result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._future.exception(timeout)

    def traceback(self, timeout: float | None = None) -> Any:
        return None

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        self._future.add_done_callback(lambda _: fn(self))


@dataclass
class FaultRule:
    method: str                 # "OfferSlots", "JobMaster/OfferSlots" or "*"
    action: str                 # one of ACTIONS
    probability: float = 1.0
    times: int | None = None    # most injections; None: no limit
    delay: float = 0.0
    injected: int = field(default=0, compare=False)

    def matches(self, full_method: str) -> bool:
        """``full_method``: gRPC's ``/yarnflow.JobMaster/OfferSlots``."""
        if self.method == "*":
            return True
        service, _, name = full_method.lstrip("/").rpartition("/")
        wanted_service, _, wanted_name = self.method.rpartition("/")
        return name == wanted_name and (not wanted_service or service.endswith(wanted_service))


def parse_rules(text: str) -> list[FaultRule]:
    """``test.rpc.faults``; a ValueError names the rule that does not parse."""
    rules = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        method, sep, spec = part.partition("=")
        fields = spec.strip().split(":")
        action, _, delay = fields[0].strip().partition("@")
        if not sep or not method.strip() or action not in ACTIONS or len(fields) > 3 \
                or bool(delay) != (action == "delay"):
            raise ValueError(f"fault rule {part!r} is not <method>=<action>[:<probability>"
                             f"[:<times>]] with an action of {', '.join(ACTIONS)} "
                             "(delay as delay@<seconds>)")
        probability = float(fields[1]) if len(fields) > 1 and fields[1].strip() else 1.0
        times = int(fields[2]) if len(fields) > 2 and fields[2].strip() else None
        if not 0 < probability <= 1 or (times is not None and times < 1):
            raise ValueError(f"fault rule {part!r}: the probability must be in (0, 1] and "
                             "the times at least 1")
        rules.append(FaultRule(method.strip(), action, probability, times,
                               float(delay) if delay else 0.0))
    return rules


class FaultInjector(grpc.UnaryUnaryClientInterceptor):   # type: ignore[misc]
    def __init__(self, rules: list[FaultRule], seed: int, process: str = "") -> None:
        """``process`` names the process (an executor's resource id): each draws its own
        sequence from the one seed, yet the same one in every run."""
        self.rules = rules
        self._random = random.Random(f"{seed}/{process}")
        self._lock = threading.Lock()
        self.log: list[tuple[str, str]] = []     # (method, action) of every injection

    def _choose(self, method: str) -> FaultRule | None:
        with self._lock:
            for rule in self.rules:
                if not rule.matches(method):
                    continue
                if rule.times is not None and rule.injected >= rule.times:
                    continue
                if self._random.random() < rule.probability:
                    rule.injected += 1
                    self.log.append((method, rule.action))
                    return rule
            return None

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any,
                              request: Any) -> Any:
        method = client_call_details.method
        method = method.decode() if isinstance(method, bytes) else str(method)
        rule = self._choose(method)
        if rule is None:
            return continuation(client_call_details, request)
        log.warning("injected fault: %s of %s", rule.action, method)
        if rule.action == "drop":
            return InjectedFailure(grpc.StatusCode.UNAVAILABLE,
                                   "injected fault: the request was lost")
        if rule.action == "duplicate":
            continuation(client_call_details, request)
            return continuation(client_call_details, request)
        outcome = _LaterOutcome()
        if rule.action == "drop-answer":
            outcome.settle_from(continuation(client_call_details, request), lose_answer=True)
            return outcome

        def send_late() -> None:
            try:
                outcome.settle_from(continuation(client_call_details, request), False)
            except Exception as err:   # noqa: BLE001 - a call that could not start
                outcome.fail(err)
        timer = threading.Timer(rule.delay, send_late)
        timer.daemon = True
        timer.start()
        return outcome


def fault_injector(rules: str, seed: int, process: str = "") -> FaultInjector | None:
    """The injector the options ask for; None (no interception at all) by default."""
    parsed = parse_rules(rules)
    if not parsed:
        return None
    log.warning("RPC fault injection is on (test.rpc.faults): %s", rules)
    return FaultInjector(parsed, seed, process)
