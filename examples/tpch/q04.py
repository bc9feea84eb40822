"""TPC-H Q4, order priority checking: orders with a late line (EXISTS: a semi join)."""
import pyarrow.compute as pc

from tpch.common import between, by_value, day, renamed, table, where

by_value(__name__)

SQL = """
select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-10-01'
  and exists (select * from lineitem where l_orderkey = o_orderkey
              and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority
"""
ORDER = ["o_orderpriority"]


def build(p, data):
    late = table(p, data, "lineitem", ["l_orderkey", "l_commitdate", "l_receiptdate"]) \
        .filter(where(lambda b: pc.less(b["l_commitdate"], b["l_receiptdate"])), name="late")
    counted = table(p, data, "orders", ["o_orderkey", "o_orderdate", "o_orderpriority"]) \
        .filter(where(lambda b: between(b["o_orderdate"], day("1993-07-01"), day("1993-10-01"))),
                name="quarter") \
        .join(late, left_on="o_orderkey", right_on="l_orderkey", how="left_semi") \
        .aggregate(["o_orderpriority"], [("o_orderkey", "count")]) \
        .sort("o_orderpriority")
    return renamed(counted, o_orderkey_count="order_count")
