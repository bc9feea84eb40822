"""TPC-H Q1, the pricing summary report: one scan, a partial aggregate chained to it,
four groups across the exchange."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, day, extended, renamed, revenue, table, where

by_value(__name__)

SQL = """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
       sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
       avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price,
       avg(l_discount) as avg_disc, count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus
"""
ORDER = ["l_returnflag", "l_linestatus"]


def charge(batch):
    return pc.multiply(pc.cast(revenue(batch), pa.float64()),
                       pc.add(1.0, pc.cast(batch["l_tax"], pa.float64())))


def build(p, data):
    lineitem = table(p, data, "lineitem", ["l_quantity", "l_extendedprice", "l_discount", "l_tax",
                                           "l_returnflag", "l_linestatus", "l_shipdate"])
    summary = lineitem \
        .filter(where(lambda b: pc.less_equal(b["l_shipdate"], day("1998-09-02"))), name="shipdate") \
        .map(extended(disc_price=revenue, charge=charge), name="prices") \
        .aggregate(["l_returnflag", "l_linestatus"],
                   [("l_quantity", "sum"), ("l_extendedprice", "sum"), ("disc_price", "sum"),
                    ("charge", "sum"), ("l_quantity", "mean"), ("l_extendedprice", "mean"),
                    ("l_discount", "mean"), ("l_quantity", "count")]) \
        .sort(*ORDER)
    return renamed(summary, l_quantity_sum="sum_qty", l_extendedprice_sum="sum_base_price",
                   disc_price_sum="sum_disc_price", charge_sum="sum_charge",
                   l_quantity_mean="avg_qty", l_extendedprice_mean="avg_price",
                   l_discount_mean="avg_disc", l_quantity_count="count_order")
