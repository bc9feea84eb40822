"""Seed 003's skewed join: 14/14 of instruments, 13 of them priced in one currency,
joined to a 492-row currencies table.

A hash join on the currency id would send ~13/14 of all rows to one subtask. This
pipeline broadcasts the small table and keeps the big one where it is, so every join
subtask gets an equal share.

    yarnflow run examples/skewed_join.py -- --rows 200000
"""
from __future__ import annotations

import argparse
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import yarnflow as yf

HERE = os.path.dirname(os.path.abspath(__file__))
NUM_CURRENCIES = 492
DOMINANT_CURRENCY = 7


def generate(data_dir: str, rows: int, seed: int = 3) -> None:
    """Write instruments (``rows`` rows, 13/14 in one currency) and currencies as Parquet."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(data_dir, "instruments"), exist_ok=True)
    os.makedirs(os.path.join(data_dir, "currencies"), exist_ok=True)
    ids = np.arange(NUM_CURRENCIES, dtype=np.int64)
    iso = [None if i % 5 == 0 else f"C{i:03d}" for i in ids]   # some lack an ISO code
    currencies = pa.table({"CurrencyId": ids, "ISOCode": pa.array(iso, pa.string()),
                           "ISOExtended": [f"X-{i:03d}" for i in ids]})
    pq.write_table(currencies, os.path.join(data_dir, "currencies", "part-0.parquet"))
    chunk = 1_000_000
    for part, start in enumerate(range(0, rows, chunk)):
        n = min(chunk, rows - start)
        skewed = rng.random(n) < 13 / 14
        currency = np.where(skewed, DOMINANT_CURRENCY, rng.integers(0, NUM_CURRENCIES, n))
        table = pa.table({"InstrumentId": np.arange(start, start + n, dtype=np.int64),
                          "CurrencyId": currency.astype(np.int64),
                          "Price": rng.random(n) * 100})
        pq.write_table(table, os.path.join(data_dir, "instruments", f"part-{part}.parquet"),
                       row_group_size=max(1, -(-n // 8)))


def currency_code(batch: pa.RecordBatch) -> pa.RecordBatch:
    """CASE WHEN ISOCode IS NOT NULL THEN ISOCode ELSE ISOExtended END AS CurrencyCode"""
    code = pc.if_else(pc.is_valid(batch["ISOCode"]), batch["ISOCode"], batch["ISOExtended"])
    return pa.RecordBatch.from_arrays(
        [batch["InstrumentId"], batch["CurrencyId"], batch["Price"], code],
        names=["InstrumentId", "CurrencyId", "Price", "CurrencyCode"])


def build(data_dir: str, out_dir: str, strategy: str = "broadcast",
          parallelism: int = 2) -> yf.Pipeline:
    pipeline = yf.Pipeline("skewed-join", parallelism=parallelism)
    instruments = pipeline.read_parquet(os.path.join(data_dir, "instruments"), name="instruments")
    currencies = pipeline.read_parquet(os.path.join(data_dir, "currencies"),
                                       name="currencies").set_parallelism(1)
    joined = instruments.join(currencies, on="CurrencyId", strategy=strategy, name="join")
    joined.map(currency_code, name="currency-code").write_parquet(out_dir, name="sink")
    return pipeline


def reference(data_dir: str) -> pa.Table:
    """The same answer computed with plain pyarrow, for comparison."""
    instruments = pq.read_table(os.path.join(data_dir, "instruments"))
    currencies = pq.read_table(os.path.join(data_dir, "currencies"))
    joined = instruments.join(currencies, keys="CurrencyId")
    return pa.Table.from_batches([currency_code(b) for b in joined.to_batches()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--data", default=os.path.join(HERE, "data", "skewed_join"))
    parser.add_argument("--out", default=os.path.join(HERE, "output", "skewed_join"))
    parser.add_argument("--strategy", choices=["broadcast", "hash"], default="broadcast")
    parser.add_argument("--parallelism", type=int, default=2)
    args = parser.parse_args()
    marker = os.path.join(args.data, f".rows-{args.rows}")
    if not os.path.exists(marker):
        print(f"generating {args.rows:,} instruments into {args.data}")
        generate(args.data, args.rows)
        open(marker, "w").close()
    if os.path.isdir(args.out):
        for name in os.listdir(args.out):
            os.remove(os.path.join(args.out, name))
    result = build(args.data, args.out, args.strategy, args.parallelism).execute()
    if result.status.value == "FINISHED":     # a detached YARN run is only SUBMITTED here
        print(f"wrote {pq.read_table(args.out).num_rows:,} rows to {args.out}")


if __name__ == "__main__":
    main()
