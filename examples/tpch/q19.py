"""TPC-H Q19, discounted revenue: three ORed brand, container, size and quantity cases."""
import decimal

import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, extended, renamed, revenue, table, where

by_value(__name__)

SQL = """
select sum(l_extendedprice * (1 - l_discount)) as revenue
from lineitem, part
where (p_partkey = l_partkey and p_brand = 'Brand#12'
       and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
       and l_quantity >= 1 and l_quantity <= 1 + 10 and p_size between 1 and 5
       and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
   or (p_partkey = l_partkey and p_brand = 'Brand#23'
       and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
       and l_quantity >= 10 and l_quantity <= 10 + 10 and p_size between 1 and 10
       and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
   or (p_partkey = l_partkey and p_brand = 'Brand#34'
       and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
       and l_quantity >= 20 and l_quantity <= 20 + 10 and p_size between 1 and 15
       and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
"""
ORDER: list = []
CASES = (("Brand#12", ("SM CASE", "SM BOX", "SM PACK", "SM PKG"), 1, 5),
         ("Brand#23", ("MED BAG", "MED BOX", "MED PKG", "MED PACK"), 10, 10),
         ("Brand#34", ("LG CASE", "LG BOX", "LG PACK", "LG PKG"), 20, 15))


def case(b, brand, containers, quantity, size):
    kind = b.schema.field("l_quantity").type
    return pc.and_(
        pc.and_(pc.equal(b["p_brand"], brand), pc.is_in(b["p_container"], pa.array(list(containers)))),
        pc.and_(pc.and_(pc.greater_equal(b["l_quantity"], pa.scalar(decimal.Decimal(quantity), kind)),
                        pc.less_equal(b["l_quantity"],
                                      pa.scalar(decimal.Decimal(quantity + 10), kind))),
                pc.and_(pc.greater_equal(b["p_size"], 1), pc.less_equal(b["p_size"], size))))


def matched(b):
    any_case = case(b, *CASES[0])
    for other in CASES[1:]:
        any_case = pc.or_(any_case, case(b, *other))
    return any_case


def shipped(b):
    return pc.and_(pc.is_in(b["l_shipmode"], pa.array(["AIR", "AIR REG"])),
                   pc.equal(b["l_shipinstruct"], "DELIVER IN PERSON"))


def build(p, data):
    parts = table(p, data, "part", ["p_partkey", "p_brand", "p_container", "p_size"])
    total = table(p, data, "lineitem", ["l_partkey", "l_quantity", "l_extendedprice",
                                        "l_discount", "l_shipmode", "l_shipinstruct"]) \
        .filter(where(shipped), name="in-person-by-air") \
        .join(parts, left_on="l_partkey", right_on="p_partkey") \
        .filter(where(matched), name="cases") \
        .map(extended(revenue=revenue), name="revenue") \
        .aggregate([], [("revenue", "sum")])
    return renamed(total, revenue_sum="revenue")
