"""Parsers for the value types options use: durations and memory sizes as people write them."""
from __future__ import annotations

import re

_DURATION_UNITS = {
    "ms": 0.001, "milli": 0.001, "millis": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "": 1.0,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0, "m": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
}
_MEMORY_UNITS = {"": 1.0, "b": 1 / 2**20, "k": 1 / 1024, "kb": 1 / 1024, "m": 1.0, "mb": 1.0,
                 "g": 1024.0, "gb": 1024.0, "t": 1024.0**2, "tb": 1024.0**2}
_NUMBER_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$")


def parse_duration(value: object) -> float:
    """Seconds as a float from ``30 s``, ``500 ms``, ``2 min`` or a bare number of seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    match = _NUMBER_UNIT.match(str(value))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _DURATION_UNITS:
        raise ValueError(f"{value!r} is not a duration; write e.g. '30 s', '500 ms' or '2 min'")
    return float(match.group(1)) * _DURATION_UNITS[unit]


def parse_memory_mb(value: object) -> int:
    """Megabytes from ``1024m``, ``3g``, ``512 mb`` or a bare number of megabytes."""
    if isinstance(value, (int, float)):
        return int(value)
    match = _NUMBER_UNIT.match(str(value))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _MEMORY_UNITS:
        raise ValueError(f"{value!r} is not a memory size; write e.g. '512m' or '3g'")
    return int(round(float(match.group(1)) * _MEMORY_UNITS[unit]))


def parse_bytes(value: object) -> int:
    """Bytes from ``10 mb``, ``512k``, ``1g`` or a bare number of bytes."""
    if isinstance(value, (int, float)):
        return int(value)
    match = _NUMBER_UNIT.match(str(value))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _MEMORY_UNITS:
        raise ValueError(f"{value!r} is not a size; write e.g. '10 mb', '512k' or '1g'")
    mb_per_unit = _MEMORY_UNITS[unit] if unit else 1 / 2**20
    return int(round(float(match.group(1)) * mb_per_unit * 2**20))


def parse_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    raise ValueError(f"{value!r} is not a boolean; write true or false")


def parse_parallelism(value: object) -> int:
    """A parallelism: a whole number of at least 1. Every way to set one (``Pipeline``'s
    argument, ``set_parallelism``, ``-p``, ``-D parallelism.default``, the configuration
    file) checks it here, so each refuses the same values with the same words."""
    text = str(value).strip()
    if isinstance(value, bool) or not text.lstrip("+").isdigit() or int(text) < 1:
        raise ValueError(f"parallelism must be a whole number of at least 1, got {value!r}")
    return int(text)
