"""TPC-H Q15, top supplier: the suppliers of the quarter's largest revenue (a view
read twice: per supplier, and its maximum)."""
import pyarrow.compute as pc

from tpch.common import between, by_value, day, extended, renamed, revenue, table, where

by_value(__name__)

SQL = """
with revenue0 as (
    select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) as total_revenue
    from lineitem
    where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-04-01'
    group by l_suppkey)
select s_suppkey, s_name, s_address, s_phone, total_revenue
from supplier, revenue0
where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) from revenue0)
order by s_suppkey
"""
ORDER = ["s_suppkey"]


def build(p, data):
    per_supplier = table(p, data, "lineitem", ["l_suppkey", "l_extendedprice", "l_discount",
                                               "l_shipdate"]) \
        .filter(where(lambda b: between(b["l_shipdate"], day("1996-01-01"), day("1996-04-01"))),
                name="quarter") \
        .map(extended(revenue=revenue), name="revenue") \
        .aggregate(["l_suppkey"], [("revenue", "sum")], name="revenue0")
    most = per_supplier.aggregate([], [("revenue_sum", "max")], name="most")
    best = per_supplier.cross_join(most) \
        .filter(where(lambda b: pc.equal(b["revenue_sum"], b["revenue_sum_max"])), name="top")
    found = table(p, data, "supplier", ["s_suppkey", "s_name", "s_address", "s_phone"]) \
        .join(best, left_on="s_suppkey", right_on="l_suppkey") \
        .select("s_suppkey", "s_name", "s_address", "s_phone", "revenue_sum") \
        .sort("s_suppkey")
    return renamed(found, revenue_sum="total_revenue")
