"""TPC-H Q21, suppliers who kept orders waiting: the only late supplier of a
multi-supplier order (EXISTS and NOT EXISTS over the order's other lines, as counts of
its distinct suppliers)."""
import pyarrow.compute as pc

from tpch.common import by_value, renamed, table, where

by_value(__name__)

SQL = """
select s_name, count(*) as numwait
from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F'
  and l1.l_receiptdate > l1.l_commitdate
  and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey
              and l2.l_suppkey <> l1.l_suppkey)
  and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey
                  and l3.l_suppkey <> l1.l_suppkey and l3.l_receiptdate > l3.l_commitdate)
  and s_nationkey = n_nationkey and n_name = 'SAUDI ARABIA'
group by s_name
order by numwait desc, s_name
limit 100
"""
ORDER = ["numwait", "s_name"]


def build(p, data):
    lines = table(p, data, "lineitem", ["l_orderkey", "l_suppkey", "l_commitdate",
                                        "l_receiptdate"])
    late = lines.filter(where(lambda b: pc.greater(b["l_receiptdate"], b["l_commitdate"])),
                        name="late")
    several = lines.aggregate(["l_orderkey"], [("l_suppkey", "count_distinct")], name="suppliers") \
        .filter(where(lambda b: pc.greater(b["l_suppkey_count_distinct"], 1)), name="several") \
        .select("l_orderkey")
    alone = late.aggregate(["l_orderkey"], [("l_suppkey", "count_distinct")], name="late-suppliers") \
        .filter(where(lambda b: pc.equal(b["l_suppkey_count_distinct"], 1)), name="alone") \
        .select("l_orderkey")
    saudi = table(p, data, "nation", ["n_nationkey", "n_name"]) \
        .filter(where(lambda b: pc.equal(b["n_name"], "SAUDI ARABIA")), name="saudi")
    supplier = table(p, data, "supplier", ["s_suppkey", "s_name", "s_nationkey"]) \
        .join(saudi, left_on="s_nationkey", right_on="n_nationkey", how="left_semi")
    finished = table(p, data, "orders", ["o_orderkey", "o_orderstatus"]) \
        .filter(where(lambda b: pc.equal(b["o_orderstatus"], "F")), name="finished")
    waiting = late.join(supplier, left_on="l_suppkey", right_on="s_suppkey") \
        .join(finished, left_on="l_orderkey", right_on="o_orderkey", how="left_semi") \
        .join(several, on="l_orderkey", how="left_semi", name="with-others") \
        .join(alone, on="l_orderkey", how="left_semi", name="only-late") \
        .aggregate(["s_name"], [("l_orderkey", "count")]) \
        .top(100, by=["l_orderkey_count", "s_name"], descending=[True, False])
    return renamed(waiting, l_orderkey_count="numwait")
