"""The global sort (issue 56): the sample, the boundaries, each row's range and the
RANGE exchange against pyarrow's own order on small tables (empty inputs, nulls in
keys, all-equal keys, a skewed column), and how the client plans the four steps."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import yarnflow.client as yf
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import RANGE_COLUMN, InvalidPipelineError, PartitionType, ShipStrategy
from yarnflow.core.operators import sort as sorting
from yarnflow.core.operators.relational import sort_keys
from yarnflow.core.operators.sort import (RangeBoundariesOperator, RangePartitionOperator,
                                          RangeSampleOperator, SortOperator, bucket_span)
from yarnflow.taskexecutor.network.partitioner import Partitioner
from tests.unit.fakes import TestingOperatorContext as Context
from tests.unit.test_relational import pipeline, shape


def table(keys, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({"k": pa.array(keys, pa.int64()), "s": [f"r{i % 7}" for i in range(len(keys))],
                     "v": pa.array(rng.random(len(keys)))})


def sorted_globally(data: pa.Table, keys, ranges: int, producers: int = 3) -> list[pa.Table]:
    """The four steps run in process as the runtime runs them: ``producers`` sample and
    partition their share, the RANGE exchange deals the rows to ``ranges`` sorts."""
    shares = [data.slice(i * len(data) // producers,
                         (i + 1) * len(data) // producers - i * len(data) // producers)
              for i in range(producers)]
    samples = []
    for index, share in enumerate(shares):
        ctx = Context(share.to_batches(max_chunksize=50))
        ctx.subtask_index = index
        RangeSampleOperator(keys).run(ctx)
        samples += ctx.out
    cuts = Context(samples)
    RangeBoundariesOperator(keys).run(cuts)
    received: list[list[pa.RecordBatch]] = [[] for _ in range(ranges)]
    for index, share in enumerate(shares):
        ctx = Context(share.to_batches(max_chunksize=50), cuts.out)
        ctx.subtask_index = index
        RangePartitionOperator(keys).run(ctx)
        exchange = Partitioner(ShipStrategy.RANGE, ("k",), ranges)
        for batch in ctx.out:
            for target, piece in exchange.split(batch):
                received[target].append(piece)
    out = []
    for batches in received:
        ctx = Context(batches, batch_rows=1000)
        SortOperator(keys).run(ctx)
        out.append(pa.Table.from_batches(ctx.out, schema=data.schema))
    return out


@pytest.mark.parametrize("descending", [False, True, [True, False]])
def test_the_ranges_read_in_order_are_pyarrows_order_with_nulls_last(descending):
    keys_ = [None if i % 11 == 0 else (i * 37) % 101 for i in range(2000)]
    data = table(keys_)
    keys = sort_keys(["k", "v"], descending)
    ranges = sorted_globally(data, keys, 4)
    assert pa.concat_tables(ranges).equals(data.sort_by(keys))
    assert all(RANGE_COLUMN not in r.column_names for r in ranges)
    assert min(r.num_rows for r in ranges) > 0.15 * len(data)      # about equal shares


def test_a_skewed_value_is_dealt_over_the_ranges_it_fills():
    """Nine rows in ten hold one value: it equals most boundaries, and its rows spread
    over the ranges those span instead of filling one."""
    keys_ = [5 if i % 10 else i for i in range(5000)]
    data = table(keys_)
    ranges = sorted_globally(data, sort_keys(["k"], False), 4)
    sizes = [r.num_rows for r in ranges]
    assert max(sizes) < 0.4 * len(data), sizes
    assert pa.concat_tables(ranges).column("k").to_pylist() == sorted(keys_)


def test_all_equal_keys_and_an_empty_input():
    data = table([1] * 1000)
    ranges = sorted_globally(data, sort_keys(["k"], False), 3)
    assert max(r.num_rows for r in ranges) < 0.5 * len(data), [r.num_rows for r in ranges]
    empty = sorted_globally(table([]), sort_keys(["k"], False), 3)
    assert sum(r.num_rows for r in empty) == 0


def test_the_sample_is_bounded_and_weighs_the_bytes_it_stands_for(monkeypatch):
    monkeypatch.setattr(sorting, "SAMPLE_ROWS", 100)
    data = table(list(range(10_000)))
    ctx = Context(data.to_batches(max_chunksize=300))
    RangeSampleOperator(sort_keys(["k"], False)).run(ctx)
    sample = pa.Table.from_batches(ctx.out)
    assert sample.num_rows == 100 and sample.column_names == ["k", sorting._WEIGHT]
    assert sum(sample.column(sorting._WEIGHT).to_pylist()) == pytest.approx(data.nbytes, rel=0.05)
    assert len(set(sample.column("k").to_pylist())) == 100               # no row twice
    assert max(sample.column("k").to_pylist()) > 5000                    # not the first rows


def test_boundaries_cut_equal_bytes_and_a_row_spans_the_boundaries_it_equals():
    samples = pa.table({"k": [1, 2, 3, 4], sorting._WEIGHT: [1.0, 1.0, 1.0, 1.0]})
    keys = sort_keys(["k"], False)
    assert sorting.boundaries(samples, keys).column("k").to_pylist() == [1, 2, 3, 4]
    heavy = pa.table({"k": [1, 2, 3], sorting._WEIGHT: [1.0, 10.0, 1.0]})
    assert set(sorting.boundaries(heavy, keys).column("k").to_pylist()) == {2}
    cuts = pa.table({"k": pa.array([2, 4, 4, 6], pa.int64())})
    batch = pa.record_batch({"k": pa.array([1, 2, 4, 5, 7, None], pa.int64())})
    lo, hi = bucket_span(batch, cuts, keys)
    assert lo.tolist() == [0, 0, 1, 3, 4, 4] and hi.tolist() == [0, 1, 3, 3, 4, 4]


def test_the_range_exchange_places_by_the_fraction_and_drops_it():
    batch = pa.record_batch({"k": [1, 2, 3], RANGE_COLUMN: [0.9, 0.1, 0.5]})
    split = Partitioner(ShipStrategy.RANGE, ("k",), 4).split(batch)
    assert [(t, b.column("k").to_pylist(), b.schema.names) for t, b in split] == \
        [(0, [2], ["k"]), (2, [3], ["k"]), (3, [1], ["k"])]
    assert Partitioner(ShipStrategy.RANGE, ("k",), 1).split(batch)[0][1].schema.names == ["k"]
    with pytest.raises(ValueError, match="not a range partitioner"):
        Partitioner(ShipStrategy.RANGE, ("k",), 2).split(batch.drop_columns([RANGE_COLUMN]))


def test_a_sort_plans_a_sample_one_boundaries_subtask_a_blocking_partition_and_a_range_exchange():
    graph = pipeline(lambda ds: ds.sort("k", descending=True))
    vertices, edges = shape(graph)
    assert vertices == [("rows", 3), ("sort-sample", 3), ("sort-boundaries", 1),
                        ("sort-partition", 3), ("sort", 3), ("sink", 3)]
    assert edges == [("rows", "sort-sample", "FORWARD", ()),
                     ("sort-sample", "sort-boundaries", "REBALANCE", ()),
                     ("rows", "sort-partition", "FORWARD", ()),
                     ("sort-boundaries", "sort-partition", "BROADCAST", ()),
                     ("sort-partition", "sort", "RANGE", ("k",)),
                     ("sort", "sink", "FORWARD", ())]
    assert next(e for e in graph.edges if e.target.name == "sort-partition" and
                e.source.name == "rows").partition_type is PartitionType.BLOCKING
    p = yf.Pipeline("chained", parallelism=2)
    p.from_arrow(table([1, 2]), name="rows").sort("k").write_parquet("/tmp/yarnflow-never",
                                                                     name="sink")
    assert [v.name for v in p.job_graph(Configuration.load()).vertices.values()] == \
        ["rows -> sort-sample", "sort-boundaries", "sort-partition", "sort -> sink"]


def test_sort_mistakes_are_refused_in_one_line():
    with pytest.raises(InvalidPipelineError, match="sort needs the columns"):
        pipeline(lambda ds: ds.sort())
    with pytest.raises(InvalidPipelineError, match="its input has no column .nope."):
        pipeline(lambda ds: ds.sort("nope"))
    with pytest.raises(InvalidPipelineError, match="one per column"):
        pipeline(lambda ds: ds.sort("k", "v", descending=[True]))
