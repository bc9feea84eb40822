"""Which task failures a restart can heal (Flink's ``ThrowableClassifier``).

A restart helps when the cause lies outside the job's code: a lost executor, a
flaky disk or network, a partition that vanished, often a user function that met
bad luck. It cannot help when the code breaks its contract with the runtime (a map
function that returns a ``dict``), or when the user says so: restarting those only
delays the failure by every attempt's back-off. Such a failure ends the job at once.
"""
from __future__ import annotations

import enum
from typing import Iterable


class NonRecoverableError(Exception):
    """Raise it (or a subclass) from user code for a failure no restart can heal: the
    job fails at once, without the restart strategy's attempts
    (``yarnflow.client.NonRecoverableError``)."""


class ContractError(NonRecoverableError):
    """User code broke the runtime's contract: the wrong type returned, columns other
    than declared, a pipeline an executor cannot load. The same code fails the same
    way on every attempt."""


class FailureKind(enum.Enum):
    RECOVERABLE = "recoverable"
    NON_RECOVERABLE = "non-recoverable"


def classify(err: BaseException, non_recoverable_names: Iterable[str] = ()) -> FailureKind:
    """NON_RECOVERABLE for a NonRecoverableError, or an exception whose type (or a base
    of it) is named in ``restart-strategy.non-recoverable-exceptions`` by its name or
    its qualified name (``ValueError``, ``mymodule.BadRecord``)."""
    if isinstance(err, NonRecoverableError):
        return FailureKind.NON_RECOVERABLE
    names = set(non_recoverable_names)
    if names:
        for kind in type(err).__mro__:
            if kind.__name__ in names or f"{kind.__module__}.{kind.__qualname__}" in names:
                return FailureKind.NON_RECOVERABLE
    return FailureKind.RECOVERABLE
