"""Input splits handed to source subtasks on request, so fast subtasks take more, and
each subtask first gets the splits stored on its own host (Flink's
LocatableInputSplitAssigner): on a cluster a source then reads its local disk instead
of pulling every block across the network.

Stealing waits, as Spark's delay scheduling does (``spark.locality.wait``): a subtask
with nothing left on its host takes at once a split with no location or one stored
on a host where no subtask of this source runs, but a split another subtask will read
locally only once it has waited ``source.locality-wait``; until then it is told to
ask again. Without the wait, whichever subtask finishes its own share first takes
the others' local splits and reads them across the network.

Fair shares come first (issue 15): with ``parallelism`` known, each subtask is owed
total // parallelism splits, and one that has its share gets more only while more
splits are left than the other subtasks are still owed (the tail is first come, so a
fast subtask helps at once), so the subtasks whose executors start first do not take
everything. A share is held for a subtask that has not asked yet for at most
``fair_share_wait`` after the source's first request: it may never start while others
hold the slots it needs (a cluster at resourcemanager.max-workers). A subtask past
its share is told to ask again only while such a held share may yet be freed; when
all that is left is owed to subtasks that asked, it is told the end at once, instead
of asking every ASK_AGAIN_INTERVAL until the others took theirs (50 ms that a short
job's every source subtask spent idle before it could finish).

The assigner remembers which subtask took which split: when a failed source attempt
is restarted, its splits go back (Flink's ``addSplitsBack``) and are handed out again,
so a restart reads every split exactly once more, and no split twice. A speculative
attempt of a subtask (one started beside a slow one) is handed the subtask's splits
again in their order, and a split either attempt takes anew joins the subtask's list
for the other: whichever finishes first has read all of them, and its output is the
subtask's. Once one of its attempts was told there is nothing more, the subtask's list
is closed, and its other attempts are told the same.
"""
from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable

import cloudpickle

from yarnflow.appmaster.jobmaster.settings import SplitSettings
from yarnflow.appmaster.jobmaster.user_code import for_readers, load_source
from yarnflow.core.clock import SYSTEM_CLOCK
from yarnflow.core.messages import AskAgain

if TYPE_CHECKING:
    from yarnflow.appmaster.jobmaster.executiongraph import ExecutionJobVertex


# How soon a waiting subtask asks again: a split it may take (one freed by a lost reader,
# or the wait ending) should not sit idle long, and the job's last splits end it.
ASK_AGAIN_INTERVAL = 0.05


class _Turn(enum.Enum):
    """What a source subtask asking for a split may do (InputSplitAssigner._turn)."""
    TAKE = "take"      # a split, if one suits its host (see the locality wait)
    WAIT = "wait"      # ask again: a share held for a subtask that has not asked may be freed
    DONE = "done"      # nothing more will be its: the rest is owed to other subtasks


class Locality(enum.Enum):
    LOCAL = "local"            # stored on the reader's host
    REMOTE = "remote"          # stored elsewhere
    UNKNOWN = "unknown"        # the file system reports no locations


@dataclass(frozen=True)
class Assigned:
    split: bytes
    locality: Locality


class InputSplitAssigner:
    def __init__(self, splits: list[Any], locality_wait: float = 0.0,
                 clock: Callable[[], float] = SYSTEM_CLOCK.monotonic, parallelism: int = 0,
                 fair_share_wait: float = 0.0) -> None:
        self._splits = [cloudpickle.dumps(s) for s in splits]
        self._hosts = [tuple(getattr(s, "hosts", ()) or ()) for s in splits]
        self._taken = [False] * len(splits)
        self._left = len(splits)
        self.total = len(splits)
        self._locality_wait = locality_wait
        self._clock = clock
        self._waiting_since: dict[str, float] = {}   # requester -> first AskAgain
        self._by_host: dict[str, deque[int]] = {}
        self._left_on: dict[str, int] = {}          # untaken splits stored on each host
        self._unlocated: deque[int] = deque()
        # per subtask (or per requester whose subtask is not known): the splits it took,
        # in order; and per requester, how far along that list it has read
        self._taken_by: dict[int | str, list[int]] = {}
        self._read: dict[str, int] = {}
        self._closed: set[int | str] = set()
        self._parallelism = parallelism
        self._share = len(splits) // parallelism if parallelism > 0 else 0
        self._fair_share_wait = fair_share_wait
        self._first_request: float | None = None
        self._given = [0] * max(parallelism, 0)       # splits held, per subtask
        self._asked = [False] * max(parallelism, 0)   # subtasks that asked at least once
        self._subtask_of: dict[str, int] = {}         # requester -> subtask index
        self._host_plan: list[str] | None = None      # subtask -> the host it should run on
        for index, hosts in enumerate(self._hosts):
            if not hosts:
                self._unlocated.append(index)
            for host in hosts:
                self._by_host.setdefault(host, deque()).append(index)
                self._left_on[host] = self._left_on.get(host, 0) + 1

    def host_for(self, subtask: int) -> str:
        """The host subtask ``subtask`` should run on to read its share locally ("" when
        the splits name no hosts): subtasks are spread over the hosts in proportion to
        the splits each stores, as a container request asks before any subtask runs."""
        if self._host_plan is None:
            self._host_plan = spread_over_hosts(self._hosts, self._parallelism)
        return self._host_plan[subtask] if 0 <= subtask < len(self._host_plan) else ""

    def next_split(self, host: str = "",
                   reader_hosts: Callable[[], Collection[str]] = tuple,
                   requester: str = "", subtask: int = -1) -> Assigned | AskAgain | None:
        """The next split for ``requester`` (an attempt of ``subtask``) on ``host``; None
        when every split is taken. ``reader_hosts()`` names the hosts where subtasks of
        this source run; it is asked only when ``host`` has nothing left, as it costs a
        pass over them."""
        key = self._key(subtask, requester)
        if key == subtask:
            self._subtask_of[requester] = subtask
        history = self._taken_by.get(key, ())
        read = self._read.get(requester, 0)
        if read < len(history):     # a speculative attempt catching up with its subtask
            self._read[requester] = read + 1
            again = history[read]
            stored = self._hosts[again]
            return Assigned(self._splits[again], Locality.LOCAL if host in stored else
                            Locality.REMOTE if stored else Locality.UNKNOWN)
        turn = _Turn.DONE if self._left == 0 or key in self._closed \
            else self._turn(subtask, requester)
        if turn is _Turn.DONE:
            self._closed.add(key)
            return None
        if turn is _Turn.WAIT:
            return AskAgain(ASK_AGAIN_INTERVAL)
        index = self._take(self._by_host.get(host))
        if index is not None:
            return self._give(index, Locality.LOCAL, requester)
        index = self._take(self._unlocated)
        if index is not None:
            return self._give(index, Locality.UNKNOWN, requester)
        readers = reader_hosts()
        orphans = [h for h, n in self._left_on.items() if n > 0 and h not in readers]
        if not orphans:
            now = self._clock()
            since = self._waiting_since.setdefault(requester, now)
            if now - since < self._locality_wait:
                return AskAgain(min(ASK_AGAIN_INTERVAL, self._locality_wait - (now - since)))
        candidates = orphans or [h for h, n in self._left_on.items() if n > 0]
        busiest = max(candidates, key=self._left_on.__getitem__)
        index = self._take(self._by_host[busiest])
        assert index is not None, "a host with splits left has them in its queue"
        return self._give(index, Locality.REMOTE, requester)

    def _turn(self, subtask: int, requester: str) -> "_Turn":
        """Whether ``subtask`` may have another split now: it is short of its share, or
        more are left than the other subtasks are owed (that surplus is the tail, first
        come); else it waits while a share is held for a subtask that has not asked, and
        is done when every split left is owed to subtasks that did."""
        if not 0 <= subtask < self._parallelism:
            return _Turn.TAKE
        now = self._clock()
        if self._first_request is None:
            self._first_request = now
        self._asked[subtask] = True
        self._subtask_of[requester] = subtask
        if self._given[subtask] < self._share:
            return _Turn.TAKE
        holding = now - self._first_request < self._fair_share_wait
        owed = held = 0
        for other, given in enumerate(self._given):
            short = max(0, self._share - given) if other != subtask else 0
            if self._asked[other]:
                owed += short
            elif holding:
                held += short
        if self._left > owed + held:
            return _Turn.TAKE
        return _Turn.WAIT if held else _Turn.DONE

    def _key(self, subtask: int, requester: str) -> int | str:
        return subtask if 0 <= subtask < self._parallelism else requester

    def add_splits_back(self, requester: str) -> int:
        """Every split ``requester``'s subtask took is handed out again (its attempts are
        all being restarted); returns how many."""
        subtask = self._subtask_of.get(requester, -1)
        key = self._key(subtask, requester)
        for reader in [r for r, s in self._subtask_of.items() if self._key(s, r) == key] + [requester]:
            self._subtask_of.pop(reader, None)
            self._read.pop(reader, None)
        indexes = self._taken_by.pop(key, [])
        self._closed.discard(key)
        if 0 <= subtask < self._parallelism:
            self._given[subtask] -= len(indexes)
        for index in reversed(indexes):      # handed out again in their first order
            self._taken[index] = False
            self._left += 1
            hosts = self._hosts[index]
            if not hosts:
                self._unlocated.appendleft(index)
            for host in hosts:
                self._by_host.setdefault(host, deque()).appendleft(index)
                self._left_on[host] = self._left_on.get(host, 0) + 1
        return len(indexes)

    def _take(self, queue: deque[int] | None) -> int | None:
        while queue:
            index = queue.popleft()
            if not self._taken[index]:
                return index
        return None

    def _give(self, index: int, locality: Locality, requester: str) -> Assigned:
        self._taken[index] = True
        self._left -= 1
        self._waiting_since.pop(requester, None)
        subtask = self._subtask_of.get(requester, -1)
        history = self._taken_by.setdefault(self._key(subtask, requester), [])
        history.append(index)
        self._read[requester] = len(history)
        if 0 <= subtask < self._parallelism:
            self._given[subtask] += 1
        for host in self._hosts[index]:
            self._left_on[host] -= 1
        return Assigned(self._splits[index], locality)


def spread_over_hosts(split_hosts: list[tuple[str, ...]], parallelism: int) -> list[str]:
    """A host per subtask: each in turn takes the host with the most splits per subtask
    already placed there (D'Hondt's rule), so 3 subtasks over 3 hosts that store a third
    each get one host each, and 2 over the same get the two that store the most."""
    stored: dict[str, int] = {}
    for hosts in split_hosts:
        for host in hosts:
            stored[host] = stored.get(host, 0) + 1
    if not stored:
        return [""] * max(parallelism, 0)
    placed = dict.fromkeys(sorted(stored), 0)
    plan = []
    for _ in range(max(parallelism, 0)):
        host = max(placed, key=lambda h: (stored[h] / (placed[h] + 1), -placed[h]))
        placed[host] += 1
        plan.append(host)
    return plan


def source_split_assigners(vertices: Iterable["ExecutionJobVertex"], settings: SplitSettings,
                           clock: Callable[[], float]) -> tuple[dict[str, InputSplitAssigner], str | None]:
    """An assigner per source vertex, from the splits its operator lists (Flink's
    InputFormat.createInputSplits on the master), and None or the failure of the first
    source that cannot list its input (a missing input, an unreadable file): that fails the job
    before it starts. A source whose splits carry its data is shipped without it."""
    assigners: dict[str, InputSplitAssigner] = {}
    for ejv in vertices:
        if not ejv.is_source:
            continue
        try:
            operator = load_source(ejv.operator)
            assigners[ejv.id] = InputSplitAssigner(
                operator.create_input_splits(ejv.parallelism, settings.split_size),
                settings.locality_wait, clock=clock, parallelism=ejv.parallelism,
                fair_share_wait=settings.fair_share_wait)
            readers = operator.for_readers()
            if readers is not operator:      # the splits carry the data
                ejv.operator = for_readers(ejv.operator, readers)
        except Exception as err:  # noqa: BLE001 - a missing input, an unreadable file
            return assigners, f"source '{ejv.name}' cannot read its input: {err}"
    return assigners, None
