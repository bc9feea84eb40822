"""Refusals across the wire, in one place: a component raises a ``Refused`` subclass
(``yarnflow.core.errors``); its gRPC service aborts the call with a status code and
the refusal's kind in the trailing metadata; the caller's gateway raises the same
kind again. Transport failures (UNAVAILABLE, DEADLINE_EXCEEDED) stay ``grpc.RpcError``.

A component that is shutting down, or whose main thread did not answer in time, ends
the call with UNAVAILABLE or DEADLINE_EXCEEDED like an unreachable peer: the caller
handles it the same way, and no traceback is logged for an ordinary shutdown."""
from __future__ import annotations

import functools
from concurrent.futures import CancelledError
from typing import Any, Callable, NoReturn, TypeVar, cast

import grpc

from yarnflow.core.errors import (REFUSALS, EndpointStopped, FencingError, MissingSharedParts,
                                  Refused, UnknownAllocation, UnknownExecutor, UnknownJob)

REFUSAL_KEY = "yarnflow-refusal"
_STATUS: dict[type[Refused], grpc.StatusCode] = {
    FencingError: grpc.StatusCode.FAILED_PRECONDITION,
    UnknownJob: grpc.StatusCode.NOT_FOUND,
    UnknownAllocation: grpc.StatusCode.NOT_FOUND,
    UnknownExecutor: grpc.StatusCode.NOT_FOUND,
    MissingSharedParts: grpc.StatusCode.NOT_FOUND,
    Refused: grpc.StatusCode.FAILED_PRECONDITION,
}
F = TypeVar("F", bound=Callable[..., Any])


def abort_refused(context: grpc.ServicerContext, err: Refused) -> NoReturn:
    context.set_trailing_metadata(((REFUSAL_KEY, type(err).__name__),))
    context.abort(_STATUS.get(type(err), grpc.StatusCode.FAILED_PRECONDITION), str(err))
    raise AssertionError("context.abort returns only by raising")


def errors_as_status(method: F) -> F:
    """Decorate a servicer method ``(self, request, context)``: a ``Refused`` it raises
    ends the call with the refusal's status instead of an internal error."""
    @functools.wraps(method)
    def serve(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Refused as err:
            abort_refused(context, err)
        except (EndpointStopped, CancelledError) as err:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(err) or "shutting down")
        except TimeoutError:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                          f"{method.__name__}: the component's main thread did not answer in time")
    return cast(F, serve)


def refusal_of(err: BaseException) -> Refused | None:
    """The refusal a failed call carries, or None for a transport failure."""
    if not isinstance(err, grpc.RpcError) or not hasattr(err, "trailing_metadata"):
        return None
    try:
        metadata = dict(err.trailing_metadata() or ())
    except Exception:   # noqa: BLE001 - a call that never reached the server
        return None
    kind = REFUSALS.get(str(metadata.get(REFUSAL_KEY, "")))
    return kind(err.details()) if kind is not None else None
