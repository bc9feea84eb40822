"""A short seeded run of the random differential test (``tests/differential.py``):
random pipelines over every relational operator on the local target, each output
against DuckDB's, with executors killed at random moments and control-plane calls
lost, duplicated and answered never. Every operator added later joins its generator,
so this run covers it too; longer runs are on demand (``python -m tests.differential``)."""
from __future__ import annotations

from tests.differential import run


def test_random_pipelines_with_killed_executors_and_lost_calls_match_duckdb(tmp_path):
    summary = run(seed=81, jobs=64, faults=["kill", "lose"], concurrency=3, timeout=150,
                  workdir=tmp_path)
    problems = "\n".join(f"{p['status']}: {p['detail']}\n  {p['plan']} {p['ending']} "
                         f"(python -m tests.differential --seed 81 --faults kill,lose "
                         f"--only {p['index']})" for p in summary["problems"])
    assert summary["wrong"] == 0 and summary["hung"] == 0, problems
    assert summary["failed"] == 0, problems
    assert summary["exact"] == 64
    assert summary["injected"]["kill"] >= 10, f"too few executors were killed: {summary}"
