"""Columns checked on the client: every column an operator names is looked up in its
input's schema (from Parquet footers, CSV headers, in-memory tables and what the
built-in operators derive) before anything is submitted; what is unknown is never
refused."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from yarnflow.conf import Configuration
from yarnflow.core.failures import ContractError
from yarnflow.core.operators import MapOperator
from tests.unit.fakes import TestingOperatorContext

ORDERS = pa.table({"id": [1, 2, 3], "customer": [7, 8, 7], "amount": [1.0, 2.0, 3.0]})
CUSTOMERS = pa.table({"customer": [7, 8], "name": ["a", "b"]})

UNCHAINED = Configuration.load(overrides=["pipeline.operator-chaining.enabled=false"])


@pytest.fixture(params=["parquet", "csv", "table"])
def orders(request, tmp_path):
    """Makes a new pipeline and its orders source, read the three ways a source knows
    its columns."""
    pq.write_table(ORDERS, tmp_path / "orders.parquet")
    (tmp_path / "orders.csv").write_text("id,customer,amount\n1,7,1.0\n2,8,2.0\n3,7,3.0\n")

    def make():
        p = yf.Pipeline("orders", parallelism=2)
        if request.param == "parquet":
            return p, p.read_parquet(str(tmp_path / "orders.parquet"))
        if request.param == "csv":
            return p, p.read_csv(str(tmp_path / "orders.csv"))
        return p, p.from_arrow(ORDERS)
    return make


def refusal(p: yf.Pipeline) -> str:
    with pytest.raises(yf.InvalidPipelineError) as err:
        p.job_graph()
    return str(err.value)


def test_a_join_key_the_left_input_lacks_is_refused_naming_its_columns_and_the_closest(orders, tmp_path):
    p, src = orders()
    src.join(p.from_arrow(CUSTOMERS), left_on="customer_id", right_on="customer") \
        .write_parquet(str(tmp_path / "out"))
    assert refusal(p) == ("invalid pipeline at vertex 'join': the left input has no column "
                          "'customer_id' (it has: id, customer, amount). Fix: did you mean "
                          "'customer'?")


def test_an_aggregate_over_a_missing_column_is_refused(orders, tmp_path):
    p, src = orders()
    src.aggregate(["customer"], [("amout", "sum")]).write_parquet(str(tmp_path / "out"))
    message = refusal(p)
    assert "vertex 'aggregate': its input has no column 'amout'" in message
    assert "did you mean 'amount'?" in message


def test_a_select_and_a_key_by_of_missing_columns_are_refused(orders, tmp_path):
    p, src = orders()
    src.select("id", "total", name="pick").write_parquet(str(tmp_path / "out"))
    assert "vertex 'pick': its input has no column 'total' (it has: id, customer, amount)" \
        in refusal(p)
    p, src = orders()
    src.key_by("cust").map(lambda b: b, name="m").write_parquet(str(tmp_path / "out2"))
    message = refusal(p)
    assert "vertex 'm'" in message and "key_by" in message and "no column 'cust'" in message


def test_columns_flow_through_built_in_operators(orders, tmp_path):
    """A filter keeps its input's columns, an aggregate makes pyarrow's, a join both
    sides': a column of either side past them is found, one of neither is refused."""
    p, src = orders()
    joined = src.filter(lambda b: pa.compute.greater(b["amount"], 0)) \
        .join(p.from_arrow(CUSTOMERS), on="customer")
    joined.aggregate(["name"], [("amount", "sum")], name="totals") \
        .select("name", "amount_sum").write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(UNCHAINED)      # each operator's schema, not only a chain's last
    totals = next(v for v in graph.vertices.values() if v.name == "totals")
    assert totals.schema.names == ["name", "amount_sum"]
    p, src = orders()
    src.join(p.from_arrow(CUSTOMERS), on="customer").select("nmae", name="pick") \
        .write_parquet(str(tmp_path / "out"))
    assert "no column 'nmae'" in refusal(p) and "did you mean 'name'?" in refusal(p)


def test_an_undeclared_function_stops_checking_and_a_declared_one_lets_it_go_on(orders, tmp_path):
    p, src = orders()
    src.map(lambda b: b.append_column("extra", pa.array([0] * b.num_rows))) \
        .select("extra").write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(UNCHAINED)      # unknown columns after the map: nothing is refused
    assert [v.schema for v in graph.vertices.values() if v.name == "select"] == [None]
    p, src = orders()
    declared = pa.schema([("id", pa.int64()), ("extra", pa.int64())])
    src.map(lambda b: b, output_schema=declared, name="add") \
        .select("extar", name="pick").write_parquet(str(tmp_path / "out"))
    assert "vertex 'pick': its input has no column 'extar' (it has: id, extra)" in refusal(p)


def test_an_aggregation_pyarrow_lacks_and_join_keys_of_different_types_are_refused(tmp_path):
    p = yf.Pipeline("bad", parallelism=1)
    p.from_arrow(ORDERS).aggregate(["customer"], [("amount", "summ")]) \
        .write_parquet(str(tmp_path / "out"))
    assert "hash_summ" in refusal(p) and "Fix: use an aggregation" in refusal(p)
    p = yf.Pipeline("bad", parallelism=1)
    text_keys = pa.table({"customer": ["7", "8"], "name": ["a", "b"]})
    p.from_arrow(ORDERS).join(p.from_arrow(text_keys), on="customer") \
        .write_parquet(str(tmp_path / "out"))
    assert "the join's key 'customer' is int64 on the left and 'customer' string on the right" \
        in refusal(p)


def test_read_parquet_columns_and_a_file_that_is_not_parquet_are_checked(tmp_path):
    pq.write_table(ORDERS, tmp_path / "orders.parquet")
    p = yf.Pipeline("cols", parallelism=1)
    p.read_parquet(str(tmp_path / "orders.parquet"), columns=["id", "amunt"]) \
        .write_parquet(str(tmp_path / "out"))
    assert "Parquet input" in refusal(p) and "no column 'amunt'" in refusal(p)
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "orders.parquet").write_text("id,amount\n1,2\n")
    p = yf.Pipeline("csv-named-parquet", parallelism=1)
    p.read_parquet(str(tmp_path / "text")).write_parquet(str(tmp_path / "out"))
    assert "is not a Parquet file" in refusal(p) and "read_csv" in refusal(p)


def test_a_declared_schema_that_is_not_one_is_refused_at_the_call():
    p = yf.Pipeline("bad", parallelism=1)
    with pytest.raises(yf.InvalidPipelineError, match=r"vertex 'm': the output_schema of map "
                       r"function 'm' is not a schema.*Fix: give a pyarrow.schema"):
        p.from_arrow(ORDERS).map(lambda b: b, name="m", output_schema=42)


def task(batches):
    return TestingOperatorContext(batches)


def test_a_function_that_returns_other_columns_than_declared_breaks_its_contract():
    batch = ORDERS.to_batches()[0]
    declared = pa.schema([("id", pa.int64())])
    with pytest.raises(ContractError, match=r"map function 'm' returned columns \(id: int64, "
                       r"customer: int64, amount: double\) other than its output_schema "
                       r"\(id: int64\)"):
        MapOperator(lambda b: b, "m", output_schema=declared).run(task([batch]))
    with pytest.raises(ContractError, match="must return a pyarrow RecordBatch or Table, got dict"):
        MapOperator(lambda b: {"id": 1}, "m").run(task([batch]))
    ok = task([batch])
    MapOperator(lambda b: b.select(["id"]), "m", output_schema=declared).run(ok)
    assert ok.out[0].num_rows == 3
