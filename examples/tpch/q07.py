"""TPC-H Q7, volume shipping: trade between France and Germany by year (nation joined
twice, once for each side)."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, day, extended, renamed, revenue, table, where

by_value(__name__)

SQL = """
select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (select n1.n_name as supp_nation, n2.n_name as cust_nation,
             extract(year from l_shipdate) as l_year,
             l_extendedprice * (1 - l_discount) as volume
      from supplier, lineitem, orders, customer, nation n1, nation n2
      where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
        and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
        and ((n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY')
             or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE'))
        and l_shipdate between date '1995-01-01' and date '1996-12-31') as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year
"""
ORDER = ["supp_nation", "cust_nation", "l_year"]


def nations(p, data, as_name, key):
    return table(p, data, "nation", ["n_nationkey", "n_name"]) \
        .filter(where(lambda b: pc.is_in(b["n_name"], pa.array(["FRANCE", "GERMANY"]))),
                name="france-germany") \
        .map(lambda b: b.rename_columns([key, as_name]), name=f"as-{as_name}")


def build(p, data):
    supplier = table(p, data, "supplier", ["s_suppkey", "s_nationkey"]) \
        .join(nations(p, data, "supp_nation", "sn_key"), left_on="s_nationkey", right_on="sn_key")
    customer = table(p, data, "customer", ["c_custkey", "c_nationkey"]) \
        .join(nations(p, data, "cust_nation", "cn_key"), left_on="c_nationkey", right_on="cn_key")
    orders = table(p, data, "orders", ["o_orderkey", "o_custkey"]) \
        .join(customer, left_on="o_custkey", right_on="c_custkey")
    shipped = table(p, data, "lineitem", ["l_orderkey", "l_suppkey", "l_extendedprice",
                                          "l_discount", "l_shipdate"]) \
        .filter(where(lambda b: pc.and_(pc.greater_equal(b["l_shipdate"], day("1995-01-01")),
                                        pc.less_equal(b["l_shipdate"], day("1996-12-31")))),
                name="two-years") \
        .map(extended(volume=revenue, l_year=lambda b: pc.year(b["l_shipdate"])), name="volume")
    summed = shipped.join(supplier, left_on="l_suppkey", right_on="s_suppkey") \
        .join(orders, left_on="l_orderkey", right_on="o_orderkey") \
        .filter(where(lambda b: pc.not_equal(b["supp_nation"], b["cust_nation"])), name="across") \
        .aggregate(["supp_nation", "cust_nation", "l_year"], [("volume", "sum")]) \
        .sort(*ORDER)
    return renamed(summed, volume_sum="revenue")
