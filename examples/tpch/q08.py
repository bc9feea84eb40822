"""TPC-H Q8, national market share: Brazil's share of American steel by year."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, day, extended, revenue, table, where

by_value(__name__)

SQL = """
select o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (select extract(year from o_orderdate) as o_year,
             l_extendedprice * (1 - l_discount) as volume, n2.n_name as nation
      from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
      where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey
        and o_custkey = c_custkey and c_nationkey = n1.n_nationkey
        and n1.n_regionkey = r_regionkey and r_name = 'AMERICA'
        and s_nationkey = n2.n_nationkey
        and o_orderdate between date '1995-01-01' and date '1996-12-31'
        and p_type = 'ECONOMY ANODIZED STEEL') as all_nations
group by o_year
order by o_year
"""
ORDER = ["o_year"]


def share(b):
    return pa.RecordBatch.from_arrays(
        [b["o_year"], pc.divide(pc.cast(b["brazil_sum"], pa.float64()),
                                pc.cast(b["volume_sum"], pa.float64()))],
        names=["o_year", "mkt_share"])


def build(p, data):
    region = table(p, data, "region", ["r_regionkey", "r_name"]) \
        .filter(where(lambda b: pc.equal(b["r_name"], "AMERICA")), name="america")
    american = table(p, data, "nation", ["n_nationkey", "n_regionkey"]) \
        .join(region, left_on="n_regionkey", right_on="r_regionkey", how="left_semi")
    customer = table(p, data, "customer", ["c_custkey", "c_nationkey"]) \
        .join(american, left_on="c_nationkey", right_on="n_nationkey", how="left_semi")
    orders = table(p, data, "orders", ["o_orderkey", "o_custkey", "o_orderdate"]) \
        .filter(where(lambda b: pc.and_(pc.greater_equal(b["o_orderdate"], day("1995-01-01")),
                                        pc.less_equal(b["o_orderdate"], day("1996-12-31")))),
                name="two-years") \
        .join(customer, left_on="o_custkey", right_on="c_custkey", how="left_semi")
    supplier = table(p, data, "supplier", ["s_suppkey", "s_nationkey"]) \
        .join(table(p, data, "nation", ["n_nationkey", "n_name"]), left_on="s_nationkey",
              right_on="n_nationkey", name="supplier-nation")
    steel = table(p, data, "part", ["p_partkey", "p_type"]) \
        .filter(where(lambda b: pc.equal(b["p_type"], "ECONOMY ANODIZED STEEL")), name="steel")
    volumes = table(p, data, "lineitem", ["l_orderkey", "l_partkey", "l_suppkey",
                                          "l_extendedprice", "l_discount"]) \
        .join(steel, left_on="l_partkey", right_on="p_partkey", how="left_semi") \
        .join(orders, left_on="l_orderkey", right_on="o_orderkey") \
        .join(supplier, left_on="l_suppkey", right_on="s_suppkey") \
        .map(extended(volume=revenue, o_year=lambda b: pc.year(b["o_orderdate"]),
                      brazil=lambda b: pc.if_else(pc.equal(b["n_name"], "BRAZIL"), revenue(b),
                                                  pa.scalar(0, revenue(b).type))),
             name="volume")
    return volumes.aggregate(["o_year"], [("brazil", "sum"), ("volume", "sum")]) \
        .sort("o_year").map(share, name="share")
