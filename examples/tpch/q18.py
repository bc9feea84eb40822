"""TPC-H Q18, large volume customer: the hundred largest orders of over 300 units."""
import decimal

import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, renamed, table, where

by_value(__name__)

SQL = """
select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
from customer, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey
                     having sum(l_quantity) > 300)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate
limit 100
"""
ORDER = ["o_totalprice", "o_orderdate"]


def large(b):
    return pc.greater(b["l_quantity_sum"],
                      pa.scalar(decimal.Decimal(300), b.schema.field("l_quantity_sum").type))


def build(p, data):
    large_orders = table(p, data, "lineitem", ["l_orderkey", "l_quantity"]) \
        .aggregate(["l_orderkey"], [("l_quantity", "sum")], name="per-order") \
        .filter(where(large), name="over-300")
    top = table(p, data, "orders", ["o_orderkey", "o_custkey", "o_orderdate", "o_totalprice"]) \
        .join(large_orders, left_on="o_orderkey", right_on="l_orderkey") \
        .join(table(p, data, "customer", ["c_custkey", "c_name"]), left_on="o_custkey",
              right_on="c_custkey") \
        .top(100, by=["o_totalprice", "o_orderdate"], descending=[True, False])
    return renamed(top, o_custkey="c_custkey", l_quantity_sum="sum(l_quantity)") \
        .select("c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice",
                "sum(l_quantity)")
