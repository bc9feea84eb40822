"""The benchmarks that need a YARN cluster, each once in its short mode, on the test
cluster (on the dockerised one from its edge host, as a user submits): a benchmark
that breaks on a cluster of hosts fails here, not in someone's measurement."""
from __future__ import annotations

import pytest

from tests.benchmarks import YARN, run_benchmark

pytestmark = pytest.mark.usefixtures("yarn_cluster")


@pytest.mark.parametrize("name", sorted(YARN))
def test_the_benchmark_runs_on_the_cluster_in_its_short_mode(name):
    args, keys = YARN[name]
    figures = run_benchmark(name, args, keys, timeout=600)
    assert all(figures[key] for key in keys), f"{name} measured nothing for some of {keys}: {figures}"
