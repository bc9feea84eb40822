"""TPC-H Q22, global sales opportunity: well-off customers of seven country codes who
never ordered (a mean without keys crossed with every row; NOT EXISTS: an anti join)."""
import pyarrow as pa
import pyarrow.compute as pc

from tpch.common import by_value, extended, renamed, table, where

by_value(__name__)

SQL = """
select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal
from (select substring(c_phone from 1 for 2) as cntrycode, c_acctbal
      from customer
      where substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17')
        and c_acctbal > (select avg(c_acctbal) from customer
                         where c_acctbal > 0.00
                           and substring(c_phone from 1 for 2)
                               in ('13', '31', '23', '29', '30', '18', '17'))
        and not exists (select * from orders where o_custkey = c_custkey)) as custsale
group by cntrycode
order by cntrycode
"""
ORDER = ["cntrycode"]
CODES = ["13", "31", "23", "29", "30", "18", "17"]


def code(b):
    return pc.utf8_slice_codeunits(b["c_phone"], 0, 2)


def build(p, data):
    chosen = table(p, data, "customer", ["c_custkey", "c_phone", "c_acctbal"]) \
        .map(extended(cntrycode=code), name="country-code") \
        .filter(where(lambda b: pc.is_in(b["cntrycode"], pa.array(CODES))), name="codes")
    mean = chosen \
        .filter(where(lambda b: pc.greater(pc.cast(b["c_acctbal"], pa.float64()), 0.0)),
                name="positive") \
        .aggregate([], [("c_acctbal", "mean")], name="mean-balance")
    counted = chosen.cross_join(mean) \
        .filter(where(lambda b: pc.greater(pc.cast(b["c_acctbal"], pa.float64()),
                                           b["c_acctbal_mean"])), name="above-mean") \
        .join(table(p, data, "orders", ["o_custkey"]), left_on="c_custkey", right_on="o_custkey",
              how="left_anti") \
        .aggregate(["cntrycode"], [("c_custkey", "count"), ("c_acctbal", "sum")]) \
        .sort("cntrycode")
    return renamed(counted, c_custkey_count="numcust", c_acctbal_sum="totacctbal")
