"""What an option is, and the registry every declared option joins: apart from the
declarations (``options.py``, ``streaming_options.py``) so that each of those modules
declares into the same registry without importing the other."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")

REGISTRY: dict[str, "Option[Any]"] = {}
# options that were renamed: a configuration that still names the old key is told the new
RENAMED = {"yarn.appmaster.memory": "jobmanager.memory.process.size"}


_SECTION = [""]


@dataclass(frozen=True)
class Option(Generic[T]):
    key: str
    parse: Callable[[object], T]
    default: T
    doc: str
    section: str = ""    # the heading it is listed under in the configuration reference

    def __post_init__(self) -> None:
        REGISTRY[self.key] = self

    @property
    def test_only(self) -> bool:
        """Options the tests inject faults with: never part of a user's configuration."""
        return self.key.startswith("test.")


def section(title: str) -> None:     # the options declared next are under it in the reference
    _SECTION[0] = title


def option(key: str, parse: Callable[[object], T], default: T, doc: str) -> Option[T]:
    return Option(key, parse, default, doc, _SECTION[0])
