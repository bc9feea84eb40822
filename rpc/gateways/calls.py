"""What every gRPC gateway does with a call: start it without blocking, and turn its
reply into the future the gateway interface promises."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, TypeVar

import grpc

from yarnflow.rpc.errors import refusal_of

T = TypeVar("T")


# The one thread of a process that starts its outgoing calls. Starting a call is not
# free: the first call in flight on a channel starts a thread for the channel's replies
# (grpc's channel spin thread), and ``Thread.start`` waits for the new thread to take the
# GIL. A JobMaster deploying to 1,000 executors, or a ResourceManager asking 1,000 of
# them for slots, paid that 1,000 times on its main thread, and every heartbeat queued
# behind it for seconds (FLINK-13184 is Flink's version). One thread, fed in order,
# keeps the calls to each peer in the order their callers made them. Its thread starts
# with the first call.
_SENDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rpc-sender")


def flush_outgoing_calls(timeout: float = 5.0) -> bool:
    """Whether every call made so far has been started within ``timeout`` (before
    channels close: a call still queued then would never leave)."""
    try:
        _SENDER.submit(lambda: None).result(timeout)
        return True
    except FutureTimeout:
        return False
    except RuntimeError:      # the interpreter is shutting down: nothing is sent any more
        return True


def call_future(method: Any, request: Any, timeout: float) -> "Future[Any]":
    """Start ``method.future(request)`` on the sender thread; a call that cannot even
    start (closed channel) becomes a failed future, never an exception in the caller."""
    out: Future[Any] = Future()

    def start() -> None:
        try:
            call = method.future(request, timeout=timeout)
        except Exception as err:  # noqa: BLE001 - handed to the caller in the future
            out.set_exception(err)
            return
        _chain(call, out)
    try:
        _SENDER.submit(start)
    except RuntimeError as err:    # the interpreter is shutting down
        out.set_exception(err)
    return out


def _chain(call: "grpc.Future", out: "Future[Any]") -> None:
    def done(fut: "grpc.Future") -> None:
        try:
            result = fut.result()
        except Exception as err:  # noqa: BLE001 - handed to the caller in the future
            out.set_exception(refusal_of(err) or err)
            return
        out.set_result(result)      # a refusal arrives as a status (rpc/errors.py)
    call.add_done_callback(done)


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
