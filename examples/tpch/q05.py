"""TPC-H Q5, local supplier volume: revenue of Asian orders supplied from the
customer's own nation (a join on two keys)."""
import pyarrow.compute as pc

from tpch.common import between, by_value, day, extended, renamed, revenue, table, where

by_value(__name__)

SQL = """
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey
  and n_regionkey = r_regionkey and r_name = 'ASIA'
  and o_orderdate >= date '1994-01-01' and o_orderdate < date '1995-01-01'
group by n_name
order by revenue desc
"""
ORDER = ["revenue"]


def build(p, data):
    region = table(p, data, "region", ["r_regionkey", "r_name"]) \
        .filter(where(lambda b: pc.equal(b["r_name"], "ASIA")), name="asia")
    nation = table(p, data, "nation", ["n_nationkey", "n_name", "n_regionkey"]) \
        .join(region, left_on="n_regionkey", right_on="r_regionkey", how="left_semi")
    supplier = table(p, data, "supplier", ["s_suppkey", "s_nationkey"]) \
        .join(nation, left_on="s_nationkey", right_on="n_nationkey")
    customer = table(p, data, "customer", ["c_custkey", "c_nationkey"])
    orders = table(p, data, "orders", ["o_orderkey", "o_custkey", "o_orderdate"]) \
        .filter(where(lambda b: between(b["o_orderdate"], day("1994-01-01"), day("1995-01-01"))),
                name="year") \
        .join(customer, left_on="o_custkey", right_on="c_custkey")
    lineitem = table(p, data, "lineitem", ["l_orderkey", "l_suppkey", "l_extendedprice",
                                           "l_discount"]) \
        .map(extended(revenue=revenue), name="revenue")
    summed = lineitem.join(orders, left_on="l_orderkey", right_on="o_orderkey") \
        .join(supplier, left_on=["l_suppkey", "c_nationkey"], right_on=["s_suppkey", "s_nationkey"],
              name="local-supplier") \
        .aggregate(["n_name"], [("revenue", "sum")]) \
        .sort("revenue_sum", descending=True)
    return renamed(summed, revenue_sum="revenue")
