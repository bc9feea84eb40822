"""Parsers of option values that several options share: each turns what a file or a
``-D`` flag says into the option's type, or raises ValueError naming what is wrong
(``Configuration`` turns that into one line naming the option)."""
from __future__ import annotations


from yarnflow.core.resources import check_node_label
from yarnflow.core.units import parse_bytes


def text(value: object) -> str:
    return str(value)


def node_label(value: object) -> str:
    return check_node_label(str(value).strip())


def acl(value: object) -> str:
    """Hadoop's ACL form, 'user1,user2 group1,group2' ('*' for everyone): checked here,
    so a stray space fails at the user's -D, not as YARN's silent misreading."""
    text = str(value).rstrip()       # ' analysts': no users, the group analysts
    parts = text.split(" ") if text.strip() else []
    if len(parts) > 2 or any(not name for part in parts if part for name in part.split(",")):
        raise ValueError(f"{value!r} is not 'users groups' (comma-separated names, one space "
                         "between users and groups, '*' for everyone)")
    return text


def pos_int(value: object) -> int:
    number = int(str(value))
    if number < 1:
        raise ValueError(f"{value!r} must be a whole number of at least 1")
    return number


def nonneg_int(value: object) -> int:
    number = int(str(value))
    if number < 0:
        raise ValueError(f"{value!r} must be a whole number of at least 0")
    return number


def collect_size(value: object) -> int:
    """Bytes a collected result may take: it travels in one gRPC message (256 MB at
    most) from executor to JobMaster to client, beside its framing."""
    size = parse_bytes(value)
    if not 0 < size <= 192 * 2**20:
        raise ValueError(f"{value!r} must be more than 0 and at most 192 mb; write a larger "
                         "result with write_parquet and read it from there")
    return size


def fraction(value: object) -> float:
    number = float(str(value))
    if not 0 < number <= 1:
        raise ValueError(f"{value!r} must be a fraction in (0, 1]")
    return number


def pos_float(value: object) -> float:
    number = float(str(value))
    if number <= 0:
        raise ValueError(f"{value!r} must be a positive number")
    return number


class Choice:
    """One of ``allowed`` (case and surrounding spaces ignored); an empty name among
    them lets the option stay unset. A class, not a closure, so the configuration
    reference can list the names."""

    def __init__(self, *allowed: str) -> None:
        self.allowed = allowed

    def __call__(self, value: object) -> str:
        text = str(value).strip().lower()
        if text not in self.allowed:
            named = ", ".join(name for name in self.allowed if name)
            raise ValueError(f"{value!r} is not one of {named}"
                             + (" (or empty)" if "" in self.allowed else ""))
        return text


def choice(*allowed: str) -> Choice:
    return Choice(*allowed)


def restart_strategy(value: object) -> str:
    """Flink's names, and the aliases Flink accepts for them."""
    name = str(value).strip().lower()
    aliases = {"none": "none", "off": "none", "disable": "none",
               "fixed-delay": "fixed-delay", "fixeddelay": "fixed-delay",
               "exponential-delay": "exponential-delay", "exponentialdelay": "exponential-delay",
               "failure-rate": "failure-rate", "failurerate": "failure-rate"}
    if name not in aliases:
        raise ValueError(f"{value!r} is not one of none, fixed-delay, exponential-delay, "
                         "failure-rate")
    return aliases[name]


def multiplier(value: object) -> float:
    number = float(str(value))
    if number < 1:
        raise ValueError(f"{value!r} must be at least 1")
    return number


def jitter(value: object) -> float:
    number = float(str(value))
    if not 0 <= number <= 1:
        raise ValueError(f"{value!r} must be a fraction in [0, 1]")
    return number


def exception_names(value: object) -> tuple[str, ...]:
    """Comma-separated (or a YAML list of) exception type names, each plain
    (``ValueError``) or qualified by its module (``mymodule.BadRecord``)."""
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    names = tuple(str(part).strip() for part in parts if str(part).strip())
    for name in names:
        if not all(piece.isidentifier() for piece in name.split(".")):
            raise ValueError(f"{name!r} is not an exception type's name (like ValueError or "
                             "mymodule.BadRecord)")
    return names


def partition_store(value: object) -> str:
    text = str(value).strip().lower()
    if text not in ("", "local", "dfs"):
        raise ValueError(f"{value!r} is not a partition store: local or dfs")
    return text


def max_parallelism(value: object) -> int:
    """``pipeline.max-parallelism``: -1 (derived from the parallelism) or 1..32768."""
    number = int(str(value).strip())
    if number != -1 and not 0 < number <= 1 << 15:
        raise ValueError(f"must be -1 or within 1..32768, got {value!r}")
    return number
