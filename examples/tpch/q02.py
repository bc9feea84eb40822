"""TPC-H Q2, the minimum cost supplier: the cheapest European supply of each brass
part of size 15 (a correlated subquery: the minimum per part, joined back)."""
import pyarrow.compute as pc

from tpch.common import by_value, table, where

by_value(__name__)

SQL = """
select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = 15
  and p_type like '%BRASS' and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'EUROPE'
  and ps_supplycost = (select min(ps_supplycost) from partsupp, supplier, nation, region
                       where p_partkey = ps_partkey and s_suppkey = ps_suppkey
                         and s_nationkey = n_nationkey and n_regionkey = r_regionkey
                         and r_name = 'EUROPE')
order by s_acctbal desc, n_name, s_name, p_partkey
limit 100
"""
ORDER = ["s_acctbal", "n_name", "s_name", "p_partkey"]


def build(p, data):
    region = table(p, data, "region", ["r_regionkey", "r_name"]) \
        .filter(where(lambda b: pc.equal(b["r_name"], "EUROPE")), name="europe")
    nation = table(p, data, "nation", ["n_nationkey", "n_name", "n_regionkey"]) \
        .join(region, left_on="n_regionkey", right_on="r_regionkey", how="left_semi")
    supplier = table(p, data, "supplier", ["s_suppkey", "s_name", "s_address", "s_nationkey",
                                           "s_phone", "s_acctbal", "s_comment"]) \
        .join(nation, left_on="s_nationkey", right_on="n_nationkey")
    supply = table(p, data, "partsupp", ["ps_partkey", "ps_suppkey", "ps_supplycost"]) \
        .join(supplier, left_on="ps_suppkey", right_on="s_suppkey", name="european-supply")
    cheapest = supply.aggregate(["ps_partkey"], [("ps_supplycost", "min")], name="cheapest")
    brass = table(p, data, "part", ["p_partkey", "p_mfgr", "p_size", "p_type"]) \
        .filter(where(lambda b: pc.and_(pc.equal(b["p_size"], 15),
                                        pc.ends_with(b["p_type"], "BRASS"))), name="brass")
    return supply.join(cheapest, left_on=["ps_partkey", "ps_supplycost"],
                       right_on=["ps_partkey", "ps_supplycost_min"], name="at-minimum") \
        .join(brass, left_on="ps_partkey", right_on="p_partkey", name="brass-supply") \
        .top(100, by=["s_acctbal", "n_name", "s_name", "ps_partkey"],
             descending=[True, False, False, False]) \
        .map(lambda b: b.rename_columns(["p_partkey" if n == "ps_partkey" else n
                                         for n in b.schema.names]), name="rename") \
        .select("s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address",
                "s_phone", "s_comment")
