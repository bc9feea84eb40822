"""Slots asked for ahead of the requests that will want them: the slots a restart needs
in place of those lost with their executor, asked while the restart strategy's pause
runs, so the replacement executor starts during the pause instead of after it (a
restart waited about half a second more for every executor it lost). The first
request a slot fits takes it over; one that arrives before any request waits in the
pool, free, and goes back after slot.idle.timeout if nothing wants it."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Callable

from yarnflow.appmaster.jobmaster.slotpool.slots import PhysicalSlot
from yarnflow.core.resources import ResourceSpec

_Entry = tuple[ResourceSpec, bool, "Future[PhysicalSlot]"]


class SlotsAhead:
    """Runs on the pool's main thread, as the pool does."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []

    def __bool__(self) -> bool:
        return bool(self._entries)

    def add(self, profile: ResourceSpec, exact: bool, future: "Future[PhysicalSlot]",
            on_main: Callable[[Callable[[], None]], object],
            unclaimed: Callable[[PhysicalSlot], None]) -> None:
        """``future``: the pool's request; ``unclaimed(slot)`` once it came before any
        request took it over (the pool frees it)."""
        entry = (profile, exact, future)
        self._entries.append(entry)

        def arrived() -> None:
            if entry in self._entries:          # else a request took it over
                self._entries.remove(entry)
                if not future.cancelled() and future.exception() is None:
                    unclaimed(future.result())
        future.add_done_callback(lambda _: on_main(arrived))

    def take(self, profile: ResourceSpec, exact: bool) -> "Future[PhysicalSlot] | None":
        """The request asked ahead that a request of ``profile`` takes over, if any."""
        for entry in self._entries:
            ahead, ahead_exact, future = entry
            fits = ahead == profile if exact or ahead_exact else profile.fits_in(ahead)
            if fits and not future.cancelled() and (not future.done() or future.exception() is None):
                self._entries.remove(entry)
                return future
        return None
