"""Hive-style partition directories (``date=2024-01-01/country=NL/part-0.parquet``), as
Spark and Hive write and read them: a sink's ``partition_by`` columns become
directories instead of columns; a source finds them again as columns, typed as Spark
infers them (integers, else floats, else text), and skips the directories a
``partition_filter`` excludes without opening a file in them.
"""
from __future__ import annotations

import posixpath
from typing import Any, Callable, Sequence
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.compute as pc

# Hive's and Spark's directory name of a null partition value
NULL_VALUE = "__HIVE_DEFAULT_PARTITION__"

PartitionFilter = Any        # a pyarrow compute expression, or a function of a dict


def directory(columns: Sequence[str], values: Sequence[Any]) -> str:
    """``col=value/...`` for one partition; values escaped as Hive escapes them."""
    return "/".join(f"{c}={NULL_VALUE if v is None else quote(_text(v), safe='')}"
                    for c, v in zip(columns, values))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return str(value)


def values_of(root: str, file: str) -> list[tuple[str, str | None]] | None:
    """The ``(column, text)`` pairs of the directories between ``root`` and ``file``;
    None when one of them is not ``column=value`` (not a partition: not an input)."""
    relative = posixpath.relpath(posixpath.dirname(file), root.rstrip("/") or "/")
    if relative == "." or relative.startswith(".."):    # the root is the file, or a glob
        return []
    pairs: list[tuple[str, str | None]] = []
    for part in relative.split("/"):
        column, equals, text = part.partition("=")
        if not equals or not column:
            return None
        pairs.append((unquote(column), None if text == NULL_VALUE else unquote(text)))
    return pairs


def infer_schema(found: list[list[tuple[str, str | None]]]) -> pa.Schema:
    """The partition columns of the files' directories, in their order, each int64 if
    every value is an integer, else float64 if a number, else string."""
    if not found:
        return pa.schema([])
    names = [c for c, _ in found[0]]
    for pairs in found[1:]:
        if [c for c, _ in pairs] != names:
            raise ValueError(f"the input's partition directories differ: {names} and "
                             f"{[c for c, _ in pairs]}")
    fields = []
    for index, name in enumerate(names):
        texts = [text for pairs in found if (text := pairs[index][1]) is not None]
        fields.append(pa.field(name, _type_of(texts)))
    return pa.schema(fields)


def _type_of(texts: list[str]) -> pa.DataType:
    for kind, parse in ((pa.int64(), int), (pa.float64(), float)):
        try:
            for text in texts:
                parse(text)
            return kind if texts else pa.string()
        except ValueError:
            continue
    return pa.string()


def typed(pairs: list[tuple[str, str | None]], schema: pa.Schema) -> tuple[Any, ...]:
    """The Python values of one file's partition texts, as ``schema`` types them."""
    out: list[Any] = []
    for (_, text), field in zip(pairs, schema):
        if text is None:
            out.append(None)
        elif pa.types.is_integer(field.type):
            out.append(int(text))
        elif pa.types.is_floating(field.type):
            out.append(float(text))
        else:
            out.append(text)
    return tuple(out)


def selected(values: list[tuple[Any, ...]], schema: pa.Schema,
             keep: PartitionFilter | None) -> list[bool]:
    """Which partitions ``keep`` selects: a pyarrow expression over the partition
    columns (``pc.field("day") >= 20240101``), or a function given a dict of them."""
    if keep is None:
        return [True] * len(values)
    if isinstance(keep, pc.Expression):
        table = pa.Table.from_pylist([dict(zip(schema.names, v)) for v in values], schema=schema)
        numbered = table.append_column("__yarnflow_row", pa.array(range(len(values)), pa.int64()))
        kept = set(numbered.filter(keep).column("__yarnflow_row").to_pylist())
        return [i in kept for i in range(len(values))]
    function: Callable[[dict[str, Any]], Any] = keep
    return [bool(function(dict(zip(schema.names, v)))) for v in values]
