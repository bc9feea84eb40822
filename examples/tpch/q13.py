"""TPC-H Q13, customer distribution: customers by their number of ordinary orders
(a left outer join, counted twice)."""
import pyarrow.compute as pc

from tpch.common import by_value, renamed, table, where

by_value(__name__)

SQL = """
select c_count, count(*) as custdist
from (select c_custkey, count(o_orderkey) as c_count
      from customer left outer join orders
           on c_custkey = o_custkey and o_comment not like '%special%requests%'
      group by c_custkey) as c_orders
group by c_count
order by custdist desc, c_count desc
"""
ORDER = ["custdist", "c_count"]


def build(p, data):
    orders = table(p, data, "orders", ["o_orderkey", "o_custkey", "o_comment"]) \
        .filter(where(lambda b: pc.invert(pc.match_like(b["o_comment"], "%special%requests%"))),
                name="ordinary")
    per_customer = table(p, data, "customer", ["c_custkey"]) \
        .join(orders, left_on="c_custkey", right_on="o_custkey", how="left") \
        .aggregate(["c_custkey"], [("o_orderkey", "count")], name="per-customer")
    counted = per_customer.aggregate(["o_orderkey_count"], [("c_custkey", "count")]) \
        .sort("c_custkey_count", "o_orderkey_count", descending=True)
    return renamed(counted, o_orderkey_count="c_count", c_custkey_count="custdist")
