"""TPC-H Q20, potential part promotion: Canadian suppliers with a surplus of forest
parts (nested IN subqueries: semi joins; a correlated sum: an aggregate joined back)."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import between, by_value, day, table, where

by_value(__name__)

SQL = """
select s_name, s_address
from supplier, nation
where s_suppkey in (
        select ps_suppkey from partsupp
        where ps_partkey in (select p_partkey from part where p_name like 'forest%')
          and ps_availqty > (select 0.5 * sum(l_quantity) from lineitem
                             where l_partkey = ps_partkey and l_suppkey = ps_suppkey
                               and l_shipdate >= date '1994-01-01'
                               and l_shipdate < date '1995-01-01'))
  and s_nationkey = n_nationkey and n_name = 'CANADA'
order by s_name
"""
ORDER = ["s_name"]


def build(p, data):
    forest = table(p, data, "part", ["p_partkey", "p_name"]) \
        .filter(where(lambda b: pc.starts_with(b["p_name"], "forest")), name="forest")
    shipped = table(p, data, "lineitem", ["l_partkey", "l_suppkey", "l_quantity", "l_shipdate"]) \
        .filter(where(lambda b: between(b["l_shipdate"], day("1994-01-01"), day("1995-01-01"))),
                name="year") \
        .aggregate(["l_partkey", "l_suppkey"], [("l_quantity", "sum")], name="shipped")
    surplus = table(p, data, "partsupp", ["ps_partkey", "ps_suppkey", "ps_availqty"]) \
        .join(forest, left_on="ps_partkey", right_on="p_partkey", how="left_semi") \
        .join(shipped, left_on=["ps_partkey", "ps_suppkey"], right_on=["l_partkey", "l_suppkey"]) \
        .filter(where(lambda b: pc.greater(pc.cast(b["ps_availqty"], pa.float64()),
                                           pc.multiply(0.5, pc.cast(b["l_quantity_sum"],
                                                                    pa.float64())))),
                name="surplus")
    canada = table(p, data, "nation", ["n_nationkey", "n_name"]) \
        .filter(where(lambda b: pc.equal(b["n_name"], "CANADA")), name="canada")
    return table(p, data, "supplier", ["s_suppkey", "s_name", "s_address", "s_nationkey"]) \
        .join(canada, left_on="s_nationkey", right_on="n_nationkey", how="left_semi") \
        .join(surplus, left_on="s_suppkey", right_on="ps_suppkey", how="left_semi") \
        .select("s_name", "s_address") \
        .sort("s_name")
