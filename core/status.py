"""Execution and job state machines as transition tables; anything else raises."""
from __future__ import annotations

import enum
from typing import Any, Callable, Collection, Mapping


class IllegalStateTransition(RuntimeError):
    pass


class ExecutionState(enum.IntEnum):
    CREATED = 0
    SCHEDULED = 1
    DEPLOYING = 2
    INITIALIZING = 3
    RUNNING = 4
    FINISHED = 5
    CANCELING = 6
    CANCELED = 7
    FAILED = 8

    @property
    def is_terminal(self) -> bool:
        return self in (ExecutionState.FINISHED, ExecutionState.CANCELED, ExecutionState.FAILED)


_E = ExecutionState
EXECUTION_TRANSITIONS: dict[ExecutionState, frozenset[ExecutionState]] = {
    _E.CREATED: frozenset({_E.SCHEDULED, _E.CANCELED, _E.FAILED}),
    _E.SCHEDULED: frozenset({_E.DEPLOYING, _E.CANCELED, _E.FAILED}),
    _E.DEPLOYING: frozenset({_E.INITIALIZING, _E.RUNNING, _E.FINISHED, _E.CANCELING, _E.FAILED}),
    _E.INITIALIZING: frozenset({_E.RUNNING, _E.FINISHED, _E.CANCELING, _E.FAILED}),
    _E.RUNNING: frozenset({_E.FINISHED, _E.CANCELING, _E.FAILED}),
    _E.CANCELING: frozenset({_E.CANCELED, _E.FAILED}),
    _E.FINISHED: frozenset(),
    _E.CANCELED: frozenset(),
    _E.FAILED: frozenset(),
}


class JobStatus(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    CANCELLING = "CANCELLING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @property
    def is_globally_terminal(self) -> bool:
        return self in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED)


_J = JobStatus
JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    _J.CREATED: frozenset({_J.RUNNING, _J.FAILED, _J.CANCELED, _J.FAILING, _J.CANCELLING}),
    _J.RUNNING: frozenset({_J.FINISHED, _J.FAILING, _J.CANCELLING}),
    _J.FAILING: frozenset({_J.FAILED}),
    _J.CANCELLING: frozenset({_J.CANCELED, _J.FAILED}),
    _J.FINISHED: frozenset(),
    _J.FAILED: frozenset(),
    _J.CANCELED: frozenset(),
}


def check_transition(table: Mapping[Any, Collection[Any]], current: enum.Enum, target: enum.Enum,
                     what: Callable[[], str]) -> None:
    """Raise unless ``table`` allows ``current -> target``. ``what`` names the object
    for the error only: it runs on every transition of every subtask otherwise."""
    if target not in table[current]:
        raise IllegalStateTransition(f"{what()}: {current.name} -> {target.name} is not allowed")
