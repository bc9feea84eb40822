"""What the TPC-H queries share: their tables, dates, and the small per-row helpers
their maps and filters call (pyarrow compute over one batch, inside a subtask).

Every join, aggregate, sort and top-N of a query is the pipeline API's; only per-row
expressions run in these helpers. The query modules and this one are pickled by
value (``cloudpickle.register_pickle_by_value``): a TaskExecutor on another host has
no copy of ``examples/``.
"""
from __future__ import annotations

import datetime
import sys
from typing import Any, Callable

import cloudpickle
import pyarrow as pa
import pyarrow.compute as pc

import yarnflow.client as yf

cloudpickle.register_pickle_by_value(sys.modules[__name__])

Batch = pa.RecordBatch


def by_value(module_name: str) -> None:
    """A query module's functions travel with the job, not as a reference to a module
    the executors cannot import."""
    cloudpickle.register_pickle_by_value(sys.modules[module_name])


def table(p: yf.Pipeline, data: str, name: str, columns: list[str]) -> yf.DataSet:
    """One TPC-H table as tpchgen-cli writes it with ``--parts``: a directory of files."""
    return p.read_parquet(f"{data.rstrip('/')}/{name}", columns=columns, name=name)


def day(text: str) -> pa.Scalar:
    return pa.scalar(datetime.date.fromisoformat(text), pa.date32())


def between(column: Any, low: Any, high: Any) -> Any:
    """SQL's half-open date range ``low <= column < high``."""
    return pc.and_(pc.greater_equal(column, low), pc.less(column, high))


def revenue(batch: Batch, price: str = "l_extendedprice", discount: str = "l_discount") -> Any:
    """``price * (1 - discount)``, exact in decimals as SQL computes it."""
    return pc.multiply(batch[price], pc.subtract(pa.scalar(1, batch.schema.field(discount).type),
                                                 batch[discount]))


def extended(**columns: Callable[[Batch], Any]) -> Callable[[Batch], Batch]:
    """A map that adds columns, each computed from the batch."""
    def add(batch: Batch) -> Batch:
        names, arrays = list(batch.schema.names), list(batch.columns)
        for name, compute in columns.items():
            names.append(name)
            arrays.append(compute(batch))
        return pa.RecordBatch.from_arrays(arrays, names=names)
    return add


def where(predicate: Callable[[Batch], Any]) -> Callable[[Batch], Any]:
    """A filter function: the rows ``predicate`` is true for (a null is false)."""
    return lambda batch: pc.fill_null(predicate(batch), False)


def renamed(ds: yf.DataSet, **names: str) -> yf.DataSet:
    """SQL's ``AS``: the columns ``names`` maps, renamed; order kept."""
    def rename(batch: Batch) -> Batch:
        return batch.rename_columns([names.get(n, n) for n in batch.schema.names])
    return ds.map(rename, name="rename")


def selected(ds: yf.DataSet, *columns: str) -> yf.DataSet:
    return ds.select(*columns, name="project")
