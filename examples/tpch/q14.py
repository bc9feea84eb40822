"""TPC-H Q14, promotion effect: the promoted parts' share of a month's revenue."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import between, by_value, day, extended, revenue, table, where

by_value(__name__)

SQL = """
select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount)
                         else 0 end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date '1995-09-01'
  and l_shipdate < date '1995-10-01'
"""
ORDER: list = []


def promoted(b):
    return pc.if_else(pc.starts_with(b["p_type"], "PROMO"), revenue(b),
                      pa.scalar(0, revenue(b).type))


def ratio(b):
    return pa.RecordBatch.from_arrays(
        [pc.divide(pc.multiply(100.0, pc.cast(b["promo_sum"], pa.float64())),
                   pc.cast(b["revenue_sum"], pa.float64()))], names=["promo_revenue"])


def build(p, data):
    return table(p, data, "lineitem", ["l_partkey", "l_extendedprice", "l_discount",
                                       "l_shipdate"]) \
        .filter(where(lambda b: between(b["l_shipdate"], day("1995-09-01"), day("1995-10-01"))),
                name="month") \
        .join(table(p, data, "part", ["p_partkey", "p_type"]), left_on="l_partkey",
              right_on="p_partkey") \
        .map(extended(revenue=revenue, promo=promoted), name="revenue") \
        .aggregate([], [("promo", "sum"), ("revenue", "sum")]) \
        .map(ratio, name="ratio")
