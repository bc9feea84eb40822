"""Whether an answer is DuckDB's (the tests' and ``bench/tpch.py``'s judge): the same
columns and rows, numbers within 1e-9 relative, and where the query has an ORDER BY,
its rows in that order as the part files give them, read in name order."""
from __future__ import annotations

import decimal
import math
from typing import Any, Sequence

import pyarrow as pa


def plain(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(plain(v) for v in row.values()) for row in table.to_pylist()]


def same(got: Sequence[Any], want: Sequence[Any]) -> bool:
    for a, b in zip(got, want):
        if isinstance(a, float) or isinstance(b, float):
            if a is None or b is None:
                if a is not b:
                    return False
            elif not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9):
                return False
        elif a != b:
            return False
    return len(got) == len(want)


def in_any_order(values: list[tuple]) -> list[tuple]:
    """Rows sorted by their exact columns first: floats that differ in the last bits
    sort the same."""
    def key(row: tuple) -> tuple:
        return ([(v is None, v) for v in row if not isinstance(v, float)],
                [(v is None, round(v, 6) if v is not None else 0) for v in row
                 if isinstance(v, float)])
    return sorted(values, key=key)


def difference(got: pa.Table | None, want: pa.Table, order: Sequence[str]) -> str:
    """Empty when ``got`` (None: nothing written) is ``want``; else what differs first."""
    if got is None:
        return "" if want.num_rows == 0 else "no answer written"
    if got.column_names != want.column_names:
        return f"columns {got.column_names}, not {want.column_names}"
    got_rows, want_rows = rows(got), rows(want)
    if len(got_rows) != len(want_rows):
        return f"{len(got_rows)} rows, not {len(want_rows)}"
    keys = [want.column_names.index(c) for c in order]
    for g, w in zip(got_rows, want_rows):
        if order and not same([g[k] for k in keys], [w[k] for k in keys]):
            return f"out of order: {g} where {w} belongs"
    for g, w in zip(in_any_order(got_rows), in_any_order(want_rows)):
        if not same(g, w):
            return f"row {g}, not {w}"
    return ""
