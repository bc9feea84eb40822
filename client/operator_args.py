"""A DataSet call's arguments as its operator takes them: the operator's own errors as
the vertex's (one line naming it), key columns as a list, a vertex name from the
user's function."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.operators.base import PlanError


def operator(vertex: str, kind: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """An operator, its arguments' errors (a declared schema that is none) as the
    vertex's."""
    try:
        return kind(*args, **kwargs)
    except PlanError as err:
        raise InvalidPipelineError(vertex, err.problem, err.fix) from None


def key_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def function_name(fn: Callable[..., Any], default: str) -> str:
    name = getattr(fn, "__name__", "")
    return default if not name or name == "<lambda>" else name
