"""TPC-H Q10, returned item reporting: the twenty customers who returned most."""
import pyarrow.compute as pc

from tpch.common import between, by_value, day, extended, renamed, revenue, table, where

by_value(__name__)

SQL = """
select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal,
       n_name, c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate >= date '1993-10-01' and o_orderdate < date '1994-01-01'
  and l_returnflag = 'R' and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20
"""
ORDER = ["revenue"]


def build(p, data):
    orders = table(p, data, "orders", ["o_orderkey", "o_custkey", "o_orderdate"]) \
        .filter(where(lambda b: between(b["o_orderdate"], day("1993-10-01"), day("1994-01-01"))),
                name="quarter")
    returned = table(p, data, "lineitem", ["l_orderkey", "l_extendedprice", "l_discount",
                                           "l_returnflag"]) \
        .filter(where(lambda b: pc.equal(b["l_returnflag"], "R")), name="returned") \
        .map(extended(revenue=revenue), name="revenue") \
        .join(orders, left_on="l_orderkey", right_on="o_orderkey") \
        .aggregate(["o_custkey"], [("revenue", "sum")], name="per-customer")
    customer = table(p, data, "customer", ["c_custkey", "c_name", "c_address", "c_nationkey",
                                           "c_phone", "c_acctbal", "c_comment"]) \
        .join(table(p, data, "nation", ["n_nationkey", "n_name"]), left_on="c_nationkey",
              right_on="n_nationkey")
    top = returned.join(customer, left_on="o_custkey", right_on="c_custkey") \
        .top(20, by="revenue_sum", descending=True)
    return renamed(top, o_custkey="c_custkey", revenue_sum="revenue") \
        .select("c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone",
                "c_comment")
