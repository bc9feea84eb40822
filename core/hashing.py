"""A stable hash of a row's key columns, the same in every process: what a hash
exchange routes rows by, and what a spilling operator cuts its data into buckets by."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def hash_rows(batch: pa.RecordBatch, keys: tuple[str, ...] | list[str]) -> np.ndarray:
    """A stable 64-bit hash per row of the key columns, equal in every process (so both
    sides of a join agree); integer keys hash by value whatever their width."""
    combined: np.ndarray | None = None
    for key in keys:
        values = _hashed(batch.column(key))
        combined = values if combined is None else combined * np.uint64(1000003) ^ values
    assert combined is not None
    return combined


def _hashed(column: pa.Array) -> np.ndarray:
    """Each row's hash of one key column. Strings and binaries hash each distinct value
    once (Arrow's dictionary encoding) and give its hash to every row holding it: turning
    millions of them into Python objects first cost more than the rest of a hash
    exchange. The hashes are pandas' of the values, whichever way they are reached."""
    import pandas as pd      # only hash-partitioning tasks pay its import (~0.2 s)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or \
            pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        encoded = pc.dictionary_encode(column)
        distinct: np.ndarray = pd.util.hash_array(encoded.dictionary.to_numpy(zero_copy_only=False))
        indices = encoded.indices
        if indices.null_count:        # a null hashes as pandas hashes None
            distinct = np.append(distinct, pd.util.hash_array(np.array([None], dtype=object)))
            indices = pc.fill_null(indices, len(distinct) - 1)
        rows: np.ndarray = distinct[indices.to_numpy()]
        return rows
    if column.null_count and (pa.types.is_integer(column.type) or
                              pa.types.is_boolean(column.type)):
        # with nulls, numpy would see floats (or objects) where a batch without them has
        # integers (or bools): 3 would hash as 3.0 there and reach another subtask than
        # the 3s of other batches. The values hash as they do without nulls; a null as
        # a string key's null does.
        filled = pc.fill_null(column, pa.scalar(False if pa.types.is_boolean(column.type)
                                                else 0, column.type))
        values: np.ndarray = _hashed(filled)
        values[column.is_null().to_numpy(zero_copy_only=False)] = \
            pd.util.hash_array(np.array([None], dtype=object))[0]
        return values
    array = column.to_numpy(zero_copy_only=False)
    if pa.types.is_integer(column.type):
        array = array.astype(np.int64)
    hashed: np.ndarray = pd.util.hash_array(array)
    return hashed


def bucket_of(hashes: np.ndarray, level: int, buckets: int) -> np.ndarray:
    """Each row's spill bucket at recursion ``level``, from bits of its hash that neither
    the exchange (which took the hash modulo the parallelism, so every row of one
    subtask agrees there) nor the level before used."""
    mixed = (hashes ^ np.uint64(0x9E3779B97F4A7C15 * (level + 1) % 2**64)) * \
        np.uint64(0xBF58476D1CE4E5B9)
    return ((mixed >> np.uint64(40)) % np.uint64(buckets)).astype(np.int64)
