"""Key groups: Flink's ranges and default, checked against a brute-force oracle."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from yarnflow.core.streaming.key_groups import (
    check_max_parallelism, default_max_parallelism, key_group_range, key_groups_of,
    operator_index_of)


@pytest.mark.parametrize("max_parallelism", [1, 7, 128, 1000])
@pytest.mark.parametrize("parallelism", [1, 2, 3, 5, 7])
def test_each_subtask_owns_exactly_the_groups_routed_to_it(max_parallelism: int,
                                                           parallelism: int) -> None:
    if parallelism > max_parallelism:
        return
    owned: list[int] = []
    for index in range(parallelism):
        groups = key_group_range(max_parallelism, parallelism, index)
        oracle = [g for g in range(max_parallelism)
                  if operator_index_of(g, max_parallelism, parallelism) == index]
        assert list(groups) == oracle          # contiguous, and the routing agrees
        assert len(groups) in (max_parallelism // parallelism,
                               -(-max_parallelism // parallelism))
        owned.extend(groups)
    assert owned == list(range(max_parallelism))     # every group once, in order


def test_default_max_parallelism_is_flinks() -> None:
    assert default_max_parallelism(1) == 128
    assert default_max_parallelism(100) == 256            # 150 rounded up
    assert default_max_parallelism(200) == 512
    assert default_max_parallelism(30000) == 32768


def test_a_parallelism_above_the_key_groups_is_refused_naming_the_fix() -> None:
    with pytest.raises(ValueError, match="raise pipeline.max-parallelism"):
        check_max_parallelism(4, 8, "window count")


def test_key_groups_are_stable_and_spread() -> None:
    keys = pa.record_batch({"k": pa.array([f"user-{i}" for i in range(20000)])})
    groups = key_groups_of(keys, ["k"], 128)
    assert (groups == key_groups_of(keys, ["k"], 128)).all()
    assert groups.min() >= 0 and groups.max() < 128
    counts = np.bincount(groups, minlength=128)
    assert counts.min() > 0.5 * counts.mean() and counts.max() < 1.5 * counts.mean()
    ints = pa.record_batch({"k": pa.array(list(range(20000)), pa.int32())})
    wide = pa.record_batch({"k": pa.array(list(range(20000)), pa.int64())})
    assert (key_groups_of(ints, ["k"], 128) == key_groups_of(wide, ["k"], 128)).all()
