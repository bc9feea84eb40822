"""A host kept free of new work for a while (Flink's BlockedNode, FLIP-224): what the
JobMaster decides, the ResourceManager enforces, and job details and the web page show."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BlockedNode:
    host: str
    cause: str          # one line: why, e.g. "3 task failures within 300 s"
    since: float        # epoch seconds
    until: float        # epoch seconds: lifted then
