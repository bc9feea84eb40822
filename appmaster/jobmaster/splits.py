"""Input splits handed to source subtasks on request, so fast subtasks take more."""
from __future__ import annotations

from collections import deque
from typing import Any

import cloudpickle


class InputSplitAssigner:
    def __init__(self, splits: list[Any]) -> None:
        self._queue = deque(cloudpickle.dumps(s) for s in splits)
        self.total = len(self._queue)

    def next_split(self) -> bytes | None:
        return self._queue.popleft() if self._queue else None
