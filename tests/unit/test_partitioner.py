"""rebalance() deals rows, not whole batches (issue 15, item 2)."""
from __future__ import annotations

import pyarrow as pa

from yarnflow.core.jobgraph import ShipStrategy
from yarnflow.taskexecutor.network.partitioner import MIN_SLICE_ROWS, Partitioner


def batch(rows: int) -> pa.RecordBatch:
    return pa.record_batch({"x": pa.array(range(rows), pa.int64())})


def deal(producers: list[list[int]], n: int = 4) -> list[int]:
    """Rows each of ``n`` consumers receives from producers sending these batch sizes."""
    got = [0] * n
    for index, sizes in enumerate(producers):
        partitioner = Partitioner(ShipStrategy.REBALANCE, (), n, start=index)
        for size in sizes:
            for target, piece in partitioner.split(batch(size)):
                got[target] += piece.num_rows
    return got


def test_few_large_batches_are_sliced_so_every_consumer_gets_an_equal_share():
    # two producers with two 5,000-row batches each: whole batches round-robin gave
    # 5000/10000/5000/0
    assert deal([[5000, 5000], [5000, 5000]]) == [5000] * 4


def test_uneven_batches_still_balance_within_one_slice():
    got = deal([[7000, 100, 2900, 31, 9969]])
    assert sum(got) == 20000 and max(got) - min(got) <= MIN_SLICE_ROWS


def test_batches_too_small_to_slice_go_whole_to_the_least_fed_consumer():
    got = deal([[10] * 100, [10] * 100])
    assert got == [500] * 4


def test_every_row_is_sent_once_and_in_order_within_a_batch():
    partitioner = Partitioner(ShipStrategy.REBALANCE, (), 3)
    pieces = partitioner.split(batch(1000))
    values = [v for _, piece in pieces for v in piece.column(0).to_pylist()]
    assert values == list(range(1000))
    assert sorted(t for t, _ in pieces) == [0, 1, 2]
