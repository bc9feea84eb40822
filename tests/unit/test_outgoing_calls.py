"""Outgoing calls start on the process's sender thread, in the order they were made, so a
component's main thread never pays for starting one (rpc/gateways/calls.py)."""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

from yarnflow.rpc.gateways.calls import call_future, flush_outgoing_calls


class _Method:
    """A stub method: records which thread started each call, answers when told."""

    def __init__(self, fail_to_start: bool = False) -> None:
        self.started: list[tuple[Any, str]] = []
        self.calls: list[Future[Any]] = []
        self._fail = fail_to_start

    def future(self, request: Any, timeout: float) -> "Future[Any]":
        if self._fail:
            raise ValueError("Cannot invoke RPC on closed channel!")
        self.started.append((request, threading.current_thread().name))
        call: Future[Any] = Future()
        self.calls.append(call)
        return call


def test_calls_start_off_the_callers_thread_in_the_order_they_were_made():
    method = _Method()
    replies = [call_future(method, i, timeout=1.0) for i in range(200)]
    assert flush_outgoing_calls(timeout=10.0), "the sender started every call"
    assert [request for request, _ in method.started] == list(range(200))
    assert {thread for _, thread in method.started} != {threading.current_thread().name}
    assert all(thread.startswith("rpc-sender") for _, thread in method.started)
    method.calls[7].set_result("answer")
    assert replies[7].result(timeout=1.0) == "answer" and not replies[8].done()


def test_a_call_that_cannot_start_is_a_failed_future_not_an_exception_in_the_caller():
    reply = call_future(_Method(fail_to_start=True), "request", timeout=1.0)
    with pytest.raises(ValueError, match="closed channel"):
        reply.result(timeout=10.0)
