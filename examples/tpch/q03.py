"""TPC-H Q3, the shipping priority: the ten unshipped orders of most revenue."""
import pyarrow.compute as pc

from tpch.common import by_value, day, extended, renamed, revenue, table, where

by_value(__name__)

SQL = """
select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate,
       o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10
"""
ORDER = ["revenue", "o_orderdate"]


def build(p, data):
    customer = table(p, data, "customer", ["c_custkey", "c_mktsegment"]) \
        .filter(where(lambda b: pc.equal(b["c_mktsegment"], "BUILDING")), name="building")
    orders = table(p, data, "orders", ["o_orderkey", "o_custkey", "o_orderdate", "o_shippriority"]) \
        .filter(where(lambda b: pc.less(b["o_orderdate"], day("1995-03-15"))), name="ordered") \
        .join(customer, left_on="o_custkey", right_on="c_custkey", how="left_semi")
    lineitem = table(p, data, "lineitem", ["l_orderkey", "l_extendedprice", "l_discount",
                                           "l_shipdate"]) \
        .filter(where(lambda b: pc.greater(b["l_shipdate"], day("1995-03-15"))), name="shipped") \
        .map(extended(revenue=revenue), name="revenue")
    top = lineitem.join(orders, left_on="l_orderkey", right_on="o_orderkey") \
        .aggregate(["l_orderkey", "o_orderdate", "o_shippriority"], [("revenue", "sum")]) \
        .top(10, by=["revenue_sum", "o_orderdate"], descending=[True, False])
    return renamed(top, revenue_sum="revenue") \
        .select("l_orderkey", "revenue", "o_orderdate", "o_shippriority")
