"""TPC-H Q11, important stock identification: German stock worth more than a share of
the total (HAVING against an aggregate without keys, crossed with every group)."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, extended, renamed, table, where

by_value(__name__)

SQL = """
select ps_partkey, sum(ps_supplycost * ps_availqty) as value
from partsupp, supplier, nation
where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY'
group by ps_partkey
having sum(ps_supplycost * ps_availqty) > (
    select sum(ps_supplycost * ps_availqty) * 0.0001
    from partsupp, supplier, nation
    where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY')
order by value desc
"""
ORDER = ["value"]


def build(p, data):
    german = table(p, data, "nation", ["n_nationkey", "n_name"]) \
        .filter(where(lambda b: pc.equal(b["n_name"], "GERMANY")), name="germany")
    supplier = table(p, data, "supplier", ["s_suppkey", "s_nationkey"]) \
        .join(german, left_on="s_nationkey", right_on="n_nationkey", how="left_semi")
    stock = table(p, data, "partsupp", ["ps_partkey", "ps_suppkey", "ps_availqty",
                                        "ps_supplycost"]) \
        .join(supplier, left_on="ps_suppkey", right_on="s_suppkey", how="left_semi") \
        .map(extended(value=lambda b: pc.multiply(b["ps_supplycost"], b["ps_availqty"])),
             name="value")
    per_part = stock.aggregate(["ps_partkey"], [("value", "sum")], name="per-part")
    total = stock.aggregate([], [("value", "sum")], name="total") \
        .map(lambda b: pa.RecordBatch.from_arrays(
            [pc.multiply(pc.cast(b["value_sum"], pa.float64()), 0.0001)], names=["threshold"]),
            name="threshold")
    kept = per_part.cross_join(total) \
        .filter(where(lambda b: pc.greater(pc.cast(b["value_sum"], pa.float64()), b["threshold"])),
                name="having") \
        .select("ps_partkey", "value_sum") \
        .sort("value_sum", descending=True)
    return renamed(kept, value_sum="value")
