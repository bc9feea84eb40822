"""The main thread of a component (Flink's RpcEndpoint): all its state changes run on
one thread, so no component needs locks around its maps and state machines.

gRPC handlers hop onto the main thread and wait for the answer; outgoing calls are
made asynchronously (``rpc.gateways.calls.call_future``) and their results hop back, so a component never blocks its own
main thread on a peer that may be calling it at the same moment.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any, Callable, Protocol, TypeVar

import grpc

from yarnflow.core.clock import SYSTEM_CLOCK, Clock
from yarnflow.core.errors import EndpointStopped, Refused

T = TypeVar("T")
log = logging.getLogger(__name__)


class ScheduledTask:
    """A handle to a delayed call; ``cancel()`` before it runs and it never runs."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class MainThreadExecutor(Protocol):
    """What a component needs of its main thread: run calls one at a time, and run
    delayed ones by its ``clock``. ``MainThread`` is the real one; unit tests use one
    that runs calls inline and fires delayed calls when a manual clock advances."""
    name: str
    clock: Clock

    def in_main_thread(self) -> bool: ...
    def execute(self, fn: Callable[..., T], *args: Any) -> "Future[T]": ...
    def call(self, fn: Callable[..., T], *args: Any, timeout: float | None = 30.0) -> T: ...
    def schedule(self, delay: float, fn: Callable[..., Any], *args: Any) -> ScheduledTask: ...
    def schedule_periodic(self, interval: float, fn: Callable[[], Any]) -> ScheduledTask: ...
    def shutdown(self) -> None: ...


class MainThread:
    def __init__(self, name: str, clock: Clock = SYSTEM_CLOCK) -> None:
        self.name = name
        self.clock = clock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-main")
        self._ident: int | None = None
        self._executor.submit(self._remember_ident).result()
        self._timers: list[tuple[float, int, ScheduledTask, Callable[[], None]]] = []
        self._counter = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._timer_thread = threading.Thread(target=self._run_timers, name=f"{name}-timers",
                                              daemon=True)
        self._timer_thread.start()

    def _remember_ident(self) -> None:
        self._ident = threading.get_ident()

    def in_main_thread(self) -> bool:
        return threading.get_ident() == self._ident

    def execute(self, fn: Callable[..., T], *args: Any) -> "Future[T]":
        """Run ``fn`` on the main thread; exceptions are logged and kept in the future."""
        def guarded() -> T:
            try:
                return fn(*args)
            except Refused:
                raise                   # an answer to the caller, not an error here
            except Exception:
                log.exception("%s: error in main-thread call %s", self.name,
                              getattr(fn, "__qualname__", fn))
                raise
        if not self._stopped:
            try:
                return self._executor.submit(guarded)
            except RuntimeError:  # the executor shut down meanwhile
                pass
        failed: Future[T] = Future()
        failed.set_exception(EndpointStopped(f"{self.name} is shut down"))
        return failed

    def call(self, fn: Callable[..., T], *args: Any, timeout: float | None = 30.0) -> T:
        """Run ``fn`` on the main thread and wait for its result (from any other thread)."""
        if self.in_main_thread():
            return fn(*args)
        try:
            return self.execute(fn, *args).result(timeout=timeout)
        except CancelledError:      # queued when the main thread shut down
            raise EndpointStopped(f"{self.name} shut down before it ran "
                                  f"{getattr(fn, '__qualname__', fn)}") from None

    def schedule(self, delay: float, fn: Callable[..., Any], *args: Any) -> ScheduledTask:
        """Run ``fn`` on the main thread after ``delay`` seconds unless cancelled first."""
        handle = ScheduledTask()
        with self._cond:
            heapq.heappush(self._timers, (self.clock.monotonic() + delay, next(self._counter), handle,
                                          lambda: fn(*args)))
            self._cond.notify()
        return handle

    def schedule_periodic(self, interval: float, fn: Callable[[], Any]) -> ScheduledTask:
        """Run ``fn`` every ``interval`` seconds on the main thread until cancelled."""
        return schedule_periodic(self, interval, fn)

    def _run_timers(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._timers or
                                             self._timers[0][0] > self.clock.monotonic()):
                    wait = (self._timers[0][0] - self.clock.monotonic()) if self._timers else None
                    self._cond.wait(timeout=wait)
                if self._stopped:
                    return
                _, _, handle, fn = heapq.heappop(self._timers)
            if not handle.cancelled:
                def run(handle: ScheduledTask = handle, fn: Callable[[], None] = fn) -> None:
                    if not handle.cancelled:
                        fn()
                self.execute(run)

    def shutdown(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._executor.shutdown(wait=False, cancel_futures=True)


def run_on_thread(call: Callable[[], T], name: str = "blocking-call") -> "Future[T]":
    """A blocking call (a NameNode's or ResourceManager's HTTP answer) on a daemon thread
    of its own, its result or error in the future: a component's main thread hands
    such calls off and takes the answer back with ``main.execute``."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as err:   # noqa: BLE001 - reported to the main thread, not lost
            future.set_exception(err)
    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def schedule_periodic(main: MainThreadExecutor, interval: float,
                      fn: Callable[[], Any]) -> ScheduledTask:
    """``fn`` every ``interval`` seconds on ``main``, each run scheduled when the last
    one ended (so a slow run never piles up behind itself), until the handle is
    cancelled; built on ``main.schedule``, so it follows ``main``'s clock."""
    handle = ScheduledTask()

    def tick() -> None:
        if handle.cancelled:
            return
        try:
            fn()
        finally:
            if not handle.cancelled:
                main.schedule(interval, tick)
    main.schedule(interval, tick)
    return handle


def when_all_done(main: MainThreadExecutor, futures: "list[Future[Any]]", timeout: float,
                  then: Callable[[], None]) -> None:
    """Run ``then`` once on ``main`` when every future is done (failed ones count) or
    ``timeout`` seconds passed, whichever comes first: a silent peer delays, never blocks."""
    lock = threading.Lock()
    state = {"left": len(futures), "fired": False}
    timer: ScheduledTask | None = None

    def fire() -> None:
        with lock:
            if state["fired"]:
                return
            state["fired"] = True
        if timer is not None:
            timer.cancel()        # nothing keeps the closure (and its component) queued
        main.execute(then)

    def one_done(_: "Future[Any]") -> None:
        with lock:
            state["left"] -= 1
            last = state["left"] == 0
        if last:
            fire()

    if not futures:
        fire()
        return
    timer = main.schedule(timeout, fire)
    for future in futures:
        future.add_done_callback(one_done)


def describe_rpc_error(err: BaseException) -> str:
    """One line for a gRPC failure: its status code and details, not a repr."""
    if isinstance(err, grpc.RpcError) and hasattr(err, "code"):
        try:
            return f"{err.code().name}: {err.details()}"
        except Exception:  # noqa: BLE001 - a non-call RpcError  # pragma: no cover
            pass
    return f"{type(err).__name__}: {err}"
