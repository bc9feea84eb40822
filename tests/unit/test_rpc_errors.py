"""How a service ends a call its component could not answer: a refusal keeps its kind,
a component that is shutting down or too busy looks like an unreachable peer, and a
bug stays a bug."""
from __future__ import annotations

import threading
from concurrent.futures import CancelledError
from typing import Any

import grpc
import pytest

from yarnflow.core.errors import UnknownJob
from yarnflow.core.errors import EndpointStopped
from yarnflow.rpc.endpoint import MainThread
from yarnflow.rpc.errors import REFUSAL_KEY, errors_as_status


class Aborted(Exception):
    pass


class FakeContext:
    def __init__(self) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""
        self.trailing: tuple[tuple[str, str], ...] = ()

    def set_trailing_metadata(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self.trailing = metadata

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.code, self.details = code, details
        raise Aborted(details)


class Service:
    def __init__(self, raises: BaseException) -> None:
        self.raises = raises

    @errors_as_status
    def Call(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC names
        raise self.raises


@pytest.mark.parametrize("raised, code", [
    (UnknownJob("no job j1"), grpc.StatusCode.NOT_FOUND),
    (EndpointStopped("jm-1 is shut down"), grpc.StatusCode.UNAVAILABLE),
    (CancelledError(), grpc.StatusCode.UNAVAILABLE),
    (TimeoutError(), grpc.StatusCode.DEADLINE_EXCEEDED),
])
def test_a_call_the_component_could_not_answer_ends_with_a_status(raised, code):
    context = FakeContext()
    with pytest.raises(Aborted):
        Service(raised).Call(None, context)
    assert context.code == code
    assert bool(context.trailing) == (code == grpc.StatusCode.NOT_FOUND)
    if context.trailing:
        assert context.trailing == ((REFUSAL_KEY, "UnknownJob"),)


def test_a_bug_is_not_turned_into_a_status():
    with pytest.raises(KeyError):
        Service(KeyError("x")).Call(None, FakeContext())


def test_a_stopped_main_thread_refuses_calls_as_stopped():
    main = MainThread("jm-test")
    main.shutdown()
    with pytest.raises(EndpointStopped, match="jm-test is shut down"):
        main.call(lambda: 1)


class SignallingMainThread(MainThread):
    """Says when a call is in its queue."""
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.queued = threading.Event()

    def execute(self, fn: Any, *args: Any) -> Any:
        future = super().execute(fn, *args)
        self.queued.set()
        return future


def test_a_call_queued_when_the_main_thread_shuts_down_raises_stopped():
    main = SignallingMainThread("jm-test")
    busy, release = threading.Event(), threading.Event()
    main.execute(lambda: (busy.set(), release.wait(10)))
    assert busy.wait(10), "the main thread did not start the blocking call"
    main.queued.clear()
    outcome: list[BaseException] = []

    def queued() -> None:
        try:
            main.call(lambda: 1, timeout=10)
        except BaseException as err:       # noqa: BLE001 - what the caller sees
            outcome.append(err)
    caller = threading.Thread(target=queued)
    caller.start()
    assert main.queued.wait(10), "the call never reached the queue"
    main.shutdown()
    release.set()
    caller.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], EndpointStopped), outcome
