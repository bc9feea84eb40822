"""What every gRPC gateway does with a call: start it without blocking, and turn its
reply into the future the gateway interface promises."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable, TypeVar

import grpc

from yarnflow.rpc.errors import refusal_of

T = TypeVar("T")


def call_future(method: Any, request: Any, timeout: float) -> "Future[Any]":
    """Start ``method.future(request)``; a call that cannot even start (closed channel)
    becomes a failed future instead of an exception in the caller's main thread."""
    try:
        return to_future(method.future(request, timeout=timeout))
    except Exception as err:  # noqa: BLE001 - handed to the caller in the future
        failed: Future[Any] = Future()
        failed.set_exception(err)
        return failed


def to_future(call: "grpc.Future") -> "Future[Any]":
    out: Future[Any] = Future()

    def done(fut: "grpc.Future") -> None:
        try:
            result = fut.result()
        except Exception as err:  # noqa: BLE001 - handed to the caller in the future
            out.set_exception(refusal_of(err) or err)
            return
        out.set_result(result)      # a refusal arrives as a status (rpc/errors.py)
    call.add_done_callback(done)
    return out


def then(future: "Future[Any]", convert: Callable[[Any], T]) -> "Future[T]":
    """``future``'s reply converted from its message to what the gateway promises."""
    out: Future[T] = Future()

    def done(fut: "Future[Any]") -> None:
        err = fut.exception()
        if err is not None:
            out.set_exception(err)
            return
        try:
            out.set_result(convert(fut.result()))
        except Exception as failed:   # noqa: BLE001 - a reply that says no
            out.set_exception(failed)
    future.add_done_callback(done)
    return out
