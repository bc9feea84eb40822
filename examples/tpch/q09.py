"""TPC-H Q9, product type profit: profit on green parts by nation and year (partsupp
joined on two keys)."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, renamed, revenue, table, where

by_value(__name__)

SQL = """
select nation, o_year, sum(amount) as sum_profit
from (select n_name as nation, extract(year from o_orderdate) as o_year,
             l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
      from part, supplier, lineitem, partsupp, orders, nation
      where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey
        and p_partkey = l_partkey and o_orderkey = l_orderkey and s_nationkey = n_nationkey
        and p_name like '%green%') as profit
group by nation, o_year
order by nation, o_year desc
"""
ORDER = ["nation", "o_year"]


def amount(b):
    return pa.RecordBatch.from_arrays(
        [b["n_name"], pc.year(b["o_orderdate"]),
         pc.subtract(revenue(b), pc.multiply(b["ps_supplycost"], b["l_quantity"]))],
        names=["nation", "o_year", "amount"])


def build(p, data):
    green = table(p, data, "part", ["p_partkey", "p_name"]) \
        .filter(where(lambda b: pc.match_substring(b["p_name"], "green")), name="green",
                selectivity=0.06)      # one part name in about 18: broadcast what is left
    supplier = table(p, data, "supplier", ["s_suppkey", "s_nationkey"]) \
        .join(table(p, data, "nation", ["n_nationkey", "n_name"]), left_on="s_nationkey",
              right_on="n_nationkey")
    lines = table(p, data, "lineitem", ["l_orderkey", "l_partkey", "l_suppkey", "l_quantity",
                                        "l_extendedprice", "l_discount"]) \
        .join(green, left_on="l_partkey", right_on="p_partkey", how="left_semi") \
        .join(table(p, data, "partsupp", ["ps_partkey", "ps_suppkey", "ps_supplycost"]),
              left_on=["l_partkey", "l_suppkey"], right_on=["ps_partkey", "ps_suppkey"]) \
        .join(supplier, left_on="l_suppkey", right_on="s_suppkey") \
        .join(table(p, data, "orders", ["o_orderkey", "o_orderdate"]), left_on="l_orderkey",
              right_on="o_orderkey")
    profit = lines.map(amount, name="amount") \
        .aggregate(["nation", "o_year"], [("amount", "sum")]) \
        .sort("nation", "o_year", descending=[False, True])
    return renamed(profit, amount_sum="sum_profit")
