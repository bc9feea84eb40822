"""TPC-H Q6, forecasting revenue change: one filtered scan, an aggregate without keys."""
import decimal

import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import between, by_value, day, extended, renamed, table, where

by_value(__name__)

SQL = """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
  and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24
"""
ORDER: list = []


def chosen(b):
    low, high = (pa.scalar(decimal.Decimal(v), b.schema.field("l_discount").type)
                 for v in ("0.05", "0.07"))
    return pc.and_(pc.and_(between(b["l_shipdate"], day("1994-01-01"), day("1995-01-01")),
                           pc.and_(pc.greater_equal(b["l_discount"], low),
                                   pc.less_equal(b["l_discount"], high))),
                   pc.less(b["l_quantity"], pa.scalar(decimal.Decimal(24),
                                                      b.schema.field("l_quantity").type)))


def build(p, data):
    total = table(p, data, "lineitem", ["l_extendedprice", "l_discount", "l_quantity",
                                        "l_shipdate"]) \
        .filter(where(chosen), name="chosen") \
        .map(extended(revenue=lambda b: pc.multiply(b["l_extendedprice"], b["l_discount"])),
             name="revenue") \
        .aggregate([], [("revenue", "sum")])
    return renamed(total, revenue_sum="revenue")
