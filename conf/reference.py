"""The configuration reference as a user reads it: each option's type and its values
written the way a file or ``-D`` takes them back (``30 s``, ``1024 mb``), for
``yarnflow config`` and the documentation's configuration page, both made from
``conf/options.py`` so neither can miss an option."""
from __future__ import annotations

from typing import Any, Callable, Iterator

from yarnflow.conf import parsers
from yarnflow.conf.options import REGISTRY, RENAMED, TARGETS, Option, target_defaults
from yarnflow.core import units

_KINDS: dict[Callable[[object], Any], str] = {
    units.parse_duration: "duration", units.parse_bool: "boolean",
    units.parse_memory_mb: "memory", units.parse_bytes: "size",
    units.parse_parallelism: "integer ≥ 1", parsers.pos_int: "integer ≥ 1",
    parsers.nonneg_int: "integer ≥ 0", parsers.fraction: "fraction in (0, 1]",
    parsers.jitter: "fraction in [0, 1]", parsers.pos_float: "number > 0",
    parsers.multiplier: "number ≥ 1", parsers.collect_size: "size ≤ 192 mb",
    parsers.text: "string", parsers.node_label: "node label",
    parsers.acl: "ACL ('users groups')", parsers.exception_names: "list of exception types",
    parsers.restart_strategy: "one of none, fixed-delay, exponential-delay, failure-rate",
    parsers.partition_store: "one of local, dfs (or empty)",
}


def kind(option: Option[Any]) -> str:
    if isinstance(option.parse, parsers.Choice):
        named = ", ".join(name for name in option.parse.allowed if name)
        return f"one of {named}" + (" (or empty)" if "" in option.parse.allowed else "")
    if option.key == "execution.target":
        return "one of " + ", ".join(TARGETS)
    return _KINDS.get(option.parse, "string")


def show(option: Option[Any], value: Any) -> str:
    """``value`` (parsed) as one would write it in yarnflow.yaml."""
    parse = option.parse
    if parse is units.parse_duration:
        return _duration(float(value))
    if parse is units.parse_memory_mb:
        return _size(int(value) * 2**20)
    if parse in (units.parse_bytes, parsers.collect_size):
        return _size(int(value))
    if parse is units.parse_bool:
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _duration(seconds: float) -> str:
    for unit, length in (("h", 3600.0), ("min", 60.0), ("s", 1.0)):
        if seconds >= length and seconds % length == 0:
            return f"{seconds / length:g} {unit}"
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def _size(size: int) -> str:
    for unit, length in (("gb", 2**30), ("mb", 2**20), ("kb", 2**10)):
        if size >= length and size % length == 0:
            return f"{size // length} {unit}"
    return f"{size} b"


def user_options() -> list[Option[Any]]:
    """Every option a user may set: all but the tests' fault injectors."""
    return [option for option in REGISTRY.values() if not option.test_only]


def sections() -> Iterator[tuple[str, list[Option[Any]]]]:
    """User options under their headings, in the order options.py declares them."""
    grouped: dict[str, list[Option[Any]]] = {}
    for option in user_options():
        grouped.setdefault(option.section, []).append(option)
    yield from grouped.items()


def formerly(option: Option[Any]) -> list[str]:
    return [old for old, new in RENAMED.items() if new == option.key]


def markdown() -> str:
    """The documentation's configuration reference, one table per section."""
    yarn = target_defaults("yarn-per-job")
    lines: list[str] = []
    for title, listed in sections():
        lines += [f"## {title}", "", "| Key | Type | Default | Description |",
                  "|---|---|---|---|"]
        for option in listed:
            default = _cell(show(option, option.default)) or "*(empty)*"
            if option.key in yarn:
                default += f"; on YARN `{show(option, option.parse(yarn[option.key]))}`"
            doc = option.doc + "".join(f" Formerly `{old}`." for old in formerly(option))
            lines.append(f"| `{option.key}` | {kind(option)} | {default} | {_escape(doc)} |")
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return f"`{text}`" if text else ""


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
