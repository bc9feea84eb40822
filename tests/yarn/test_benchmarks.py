"""The benchmarks that need a YARN cluster, each once in its short mode, on the test
cluster (on the dockerised one from its edge host, as a user submits): a benchmark
that breaks on a cluster of hosts fails here, not in someone's measurement."""
from __future__ import annotations

import pytest

from tests.benchmarks import YARN, run_benchmark

# alone: each measurement waits for an idle cluster, which tests side by side never
# give it (straggler.py timed out so in CI)
pytestmark = [pytest.mark.usefixtures("yarn_cluster"), pytest.mark.alone]


@pytest.mark.parametrize("name", sorted(YARN))
def test_the_benchmark_runs_on_the_cluster_in_its_short_mode(name):
    args, keys = YARN[name]
    figures = run_benchmark(name, args, keys, timeout=1200)
    # a count may be 0 (stage-1 subtasks run again); a latency or rate may not
    nothing = [k for k in keys if figures[k] is None
               or (figures[k] == 0 and k.endswith(("_s", "_ms", "_minute")))]
    assert not nothing, f"{name} measured nothing for {nothing}: {figures}"
