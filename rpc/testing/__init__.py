"""Test-only parts of the wire. They ship in the wheel because the tests run them
inside real ApplicationMasters and TaskExecutors (on YARN, in containers on other
hosts), but nothing here is imported unless a ``test.*`` option asks for it."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yarnflow.rpc.testing.faults import FaultInjector


def fault_injector(rules: str, seed: int, process: str = "") -> FaultInjector | None:
    """The injector ``test.rpc.faults`` asks for; None, without loading it, by default."""
    if not rules.strip():
        return None
    from yarnflow.rpc.testing.faults import fault_injector as injector
    return injector(rules, seed, process)
