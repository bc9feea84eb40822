"""A blocking call given a deadline: for clients (Hadoop's, Skein's) that take no
timeout of their own and can wait for minutes on a peer that went away."""
from __future__ import annotations

import threading
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import Callable, TypeVar, cast

T = TypeVar("T")


class CallTimedOut(TimeoutError):
    """The call did not return in time. It still runs: ``late`` holds what it returns
    when it does, so that what it made (a container, say) can be undone."""

    def __init__(self, what: str, timeout: float, late: "Future[object]") -> None:
        super().__init__(f"{what} did not complete within {timeout:g} s")
        self.late = late


def call_within(call: Callable[[], T], timeout: float, what: str) -> T:
    """``call()``'s result, or ``CallTimedOut`` after ``timeout`` seconds. The call runs
    on a daemon thread, so one that never returns is abandoned, not waited for at exit."""
    future: Future[T] = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(call())
        except BaseException as err:   # noqa: BLE001 - handed to whoever waits
            future.set_exception(err)

    threading.Thread(target=run, name=f"bounded call: {what}", daemon=True).start()
    try:
        return future.result(timeout)
    except FutureTimeout:
        raise CallTimedOut(what, timeout, cast("Future[object]", future)) from None
