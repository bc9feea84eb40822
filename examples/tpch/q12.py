"""TPC-H Q12, shipping modes and order priority: late lines by mode, split by the
order's priority."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import between, by_value, day, extended, renamed, table, where

by_value(__name__)

SQL = """
select l_shipmode,
       sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH'
                then 1 else 0 end) as high_line_count,
       sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH'
                then 1 else 0 end) as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP')
  and l_commitdate < l_receiptdate and l_shipdate < l_commitdate
  and l_receiptdate >= date '1994-01-01' and l_receiptdate < date '1995-01-01'
group by l_shipmode
order by l_shipmode
"""
ORDER = ["l_shipmode"]


def late(b):
    return pc.and_(pc.and_(pc.is_in(b["l_shipmode"], pa.array(["MAIL", "SHIP"])),
                           pc.less(b["l_commitdate"], b["l_receiptdate"])),
                   pc.and_(pc.less(b["l_shipdate"], b["l_commitdate"]),
                           between(b["l_receiptdate"], day("1994-01-01"), day("1995-01-01"))))


def high(b):
    return pc.is_in(b["o_orderpriority"], pa.array(["1-URGENT", "2-HIGH"]))


def build(p, data):
    lines = table(p, data, "lineitem", ["l_orderkey", "l_shipmode", "l_commitdate",
                                        "l_receiptdate", "l_shipdate"]) \
        .filter(where(late), name="late", selectivity=0.01) \
        .join(table(p, data, "orders", ["o_orderkey", "o_orderpriority"]), left_on="l_orderkey",
              right_on="o_orderkey") \
        .map(extended(high=lambda b: pc.cast(high(b), pa.int64()),
                      low=lambda b: pc.cast(pc.invert(high(b)), pa.int64())), name="priority")
    counted = lines.aggregate(["l_shipmode"], [("high", "sum"), ("low", "sum")]).sort("l_shipmode")
    return renamed(counted, high_sum="high_line_count", low_sum="low_line_count")
