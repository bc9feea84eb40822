"""TPC-H Q16, parts/supplier relationship: suppliers per kind of part, leaving out
those with complaints (NOT IN: an anti join; COUNT DISTINCT: a one-phase aggregate)."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, renamed, table, where

by_value(__name__)

SQL = """
select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey and p_brand <> 'Brand#45'
  and p_type not like 'MEDIUM POLISHED%' and p_size in (49, 14, 23, 45, 19, 3, 36, 9)
  and ps_suppkey not in (select s_suppkey from supplier
                         where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size
order by supplier_cnt desc, p_brand, p_type, p_size
"""
ORDER = ["supplier_cnt", "p_brand", "p_type", "p_size"]


def wanted(b):
    return pc.and_(pc.and_(pc.not_equal(b["p_brand"], "Brand#45"),
                           pc.invert(pc.starts_with(b["p_type"], "MEDIUM POLISHED"))),
                   pc.is_in(b["p_size"], pa.array([49, 14, 23, 45, 19, 3, 36, 9],
                                                  b.schema.field("p_size").type)))


def build(p, data):
    complained = table(p, data, "supplier", ["s_suppkey", "s_comment"]) \
        .filter(where(lambda b: pc.match_like(b["s_comment"], "%Customer%Complaints%")),
                name="complaints")
    parts = table(p, data, "part", ["p_partkey", "p_brand", "p_type", "p_size"]) \
        .filter(where(wanted), name="wanted")
    counted = table(p, data, "partsupp", ["ps_partkey", "ps_suppkey"]) \
        .join(complained, left_on="ps_suppkey", right_on="s_suppkey", how="left_anti") \
        .join(parts, left_on="ps_partkey", right_on="p_partkey") \
        .aggregate(["p_brand", "p_type", "p_size"], [("ps_suppkey", "count_distinct")]) \
        .sort("ps_suppkey_count_distinct", "p_brand", "p_type", "p_size",
              descending=[True, False, False, False])
    return renamed(counted, ps_suppkey_count_distinct="supplier_cnt")
