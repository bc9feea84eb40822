"""The benchmarks that need no cluster, each once in its short mode."""
from __future__ import annotations

import pytest

from tests.benchmarks import DOCKER, LOCAL, NOT_BENCHMARKS, ROOT, YARN, run_benchmark


def test_every_benchmark_is_named_with_its_tier():
    named = set(LOCAL) | set(YARN) | set(DOCKER) | NOT_BENCHMARKS
    present = {path.name for path in (ROOT / "bench").glob("*.py")}
    assert present - named == set(), "a benchmark not named in tests/benchmarks.py"
    assert named - present == set(), "a benchmark named here is gone"


@pytest.mark.parametrize("name", sorted(LOCAL))
def test_the_benchmark_runs_in_its_short_mode(name):
    args, keys = LOCAL[name]
    run_benchmark(name, args, keys, timeout=600)
