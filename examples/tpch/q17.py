"""TPC-H Q17, small-quantity-order revenue: lines below a fifth of their part's mean
quantity (a correlated subquery: the mean per part, joined back)."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, table, where

by_value(__name__)

SQL = """
select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)
"""
ORDER: list = []


def build(p, data):
    parts = table(p, data, "part", ["p_partkey", "p_brand", "p_container"]) \
        .filter(where(lambda b: pc.and_(pc.equal(b["p_brand"], "Brand#23"),
                                        pc.equal(b["p_container"], "MED BOX"))), name="med-box")
    lines = table(p, data, "lineitem", ["l_partkey", "l_quantity", "l_extendedprice"]) \
        .join(parts, left_on="l_partkey", right_on="p_partkey", how="left_semi")
    means = lines.aggregate(["l_partkey"], [("l_quantity", "mean")], name="mean-quantity")
    return lines.join(means, on="l_partkey") \
        .filter(where(lambda b: pc.less(pc.cast(b["l_quantity"], pa.float64()),
                                        pc.multiply(0.2, b["l_quantity_mean"]))), name="small") \
        .aggregate([], [("l_extendedprice", "sum")]) \
        .map(lambda b: pa.RecordBatch.from_arrays(
            [pc.divide(pc.cast(b["l_extendedprice_sum"], pa.float64()), 7.0)],
            names=["avg_yearly"]), name="yearly")
