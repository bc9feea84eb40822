"""Whether a job may restart after a failure, and after how long (Flink's
RestartBackoffTimeStrategy): ``notify_failure`` once per failure, then ``can_restart``
and ``backoff_time``. Time is the JobMaster clock's ``monotonic()``; the only
randomness (exponential-delay's jitter) comes from an injectable ``random``, so a
test knows every pause.
"""
from __future__ import annotations

import random as _random
from collections import deque
from typing import Callable, Protocol

from yarnflow.appmaster.jobmaster.settings import RestartSettings


class RestartStrategy(Protocol):
    def notify_failure(self, now: float) -> None: ...
    def can_restart(self) -> bool: ...
    def backoff_time(self) -> float: ...
    def exhausted(self) -> str:
        """Why ``can_restart`` said no, naming the option that would allow more."""
        ...


class NoRestart:
    def notify_failure(self, now: float) -> None:
        pass

    def can_restart(self) -> bool:
        return False

    def backoff_time(self) -> float:
        return 0.0

    def exhausted(self) -> str:
        return "restart-strategy.type is none"


class FixedDelayRestart:
    def __init__(self, attempts: int, delay: float) -> None:
        self._attempts = attempts
        self._delay = delay
        self._failures = 0

    def notify_failure(self, now: float) -> None:
        self._failures += 1

    def can_restart(self) -> bool:
        return self._failures <= self._attempts

    def backoff_time(self) -> float:
        return self._delay

    def exhausted(self) -> str:
        return (f"{self._attempts} restarts were allowed "
                "(restart-strategy.fixed-delay.attempts)")


class FailureRateRestart:
    """At most ``max_failures`` failures within any ``interval``; one more fails the job."""

    def __init__(self, max_failures: int, interval: float, delay: float) -> None:
        self._max = max_failures
        self._interval = interval
        self._delay = delay
        self._failures: deque[float] = deque()

    def notify_failure(self, now: float) -> None:
        self._failures.append(now)
        while self._failures and now - self._failures[0] > self._interval:
            self._failures.popleft()

    def can_restart(self) -> bool:
        return len(self._failures) <= self._max

    def backoff_time(self) -> float:
        return self._delay

    def exhausted(self) -> str:
        return (f"more than {self._max} failures within {self._interval:g} s "
                "(restart-strategy.failure-rate.max-failures-per-interval)")


class ExponentialDelayRestart:
    """Pauses grow by ``multiplier`` up to ``max_backoff``, each varied by ``jitter``;
    ``attempts`` restarts are allowed until a failure comes ``reset_threshold`` after
    the previous one, which starts pauses and count afresh (a job that ran well for an
    hour is not one failure away from its end)."""

    def __init__(self, initial: float, max_backoff: float, multiplier: float,
                 reset_threshold: float, jitter: float, attempts: int,
                 random: Callable[[], float] = _random.random) -> None:
        self._initial = initial
        self._max = max(max_backoff, initial)
        self._multiplier = multiplier
        self._reset_threshold = reset_threshold
        self._jitter = jitter
        self._attempts = attempts
        self._random = random
        self._failures = 0
        self._backoff = 0.0
        self._last_failure: float | None = None

    def notify_failure(self, now: float) -> None:
        if self._last_failure is not None and now - self._last_failure >= self._reset_threshold:
            self._failures, self._backoff = 0, 0.0
        self._last_failure = now
        self._failures += 1
        self._backoff = self._initial if self._failures == 1 else \
            min(self._backoff * self._multiplier, self._max)

    def can_restart(self) -> bool:
        return self._failures <= self._attempts

    def backoff_time(self) -> float:
        spread = self._backoff * self._jitter * (2 * self._random() - 1)
        return max(0.0, min(self._backoff + spread, self._max))

    def exhausted(self) -> str:
        return (f"{self._attempts} restarts were allowed "
                "(restart-strategy.exponential-delay.attempts-before-reset-backoff)")


def restart_strategy(settings: RestartSettings,
                     random: Callable[[], float] = _random.random) -> RestartStrategy:
    if settings.kind == "none":
        return NoRestart()
    if settings.kind == "fixed-delay":
        return FixedDelayRestart(settings.fixed_attempts, settings.fixed_delay)
    if settings.kind == "failure-rate":
        return FailureRateRestart(settings.rate_max_failures, settings.rate_interval,
                                  settings.rate_delay)
    return ExponentialDelayRestart(
        settings.exp_initial_backoff, settings.exp_max_backoff, settings.exp_multiplier,
        settings.exp_reset_threshold, settings.exp_jitter, settings.exp_attempts, random)
