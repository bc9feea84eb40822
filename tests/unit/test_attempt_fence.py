"""Issue 53, item 4: an ApplicationMaster attempt that YARN replaced (its host was cut
off, then came back) touches nothing of a job's files: not the staging directory its
successor recovered the job into, not the stored results, not the archive."""
from __future__ import annotations

import pyarrow as pa

import yarnflow.client as yf
from yarnflow.appmaster.attempt_fence import NO_FENCE, AttemptFence, AttemptReplaced
from yarnflow.appmaster.jobmaster.job_events import JobStorage
from yarnflow.appmaster.jobmaster.outputs import JobOutputs
from yarnflow.conf import Configuration
from yarnflow.core.fs import FileSystemSettings, open_filesystem
from yarnflow.rpc.codec import as_received

import pytest


def fences(tmp_path, *attempts: int) -> list[AttemptFence]:
    directory = f"file://{tmp_path}/.attempts/application_1_0001"
    fs = open_filesystem(directory, FileSystemSettings())
    return [AttemptFence(fs, directory, n) for n in attempts]


def test_an_attempt_learns_from_a_newer_claim_that_it_was_replaced(tmp_path):
    first, second = fences(tmp_path, 1, 2)
    first.claim()
    first.check("anything")                     # alone: it owns the application
    assert not first.replaced()
    second.claim()
    with pytest.raises(AttemptReplaced, match="attempt 1 was replaced by attempt 2: "
                                              "committing is left to it"):
        first.check("committing")
    second.check("committing")                  # the newer one is not fenced by the older
    assert first.replaced() and not second.replaced()
    assert not NO_FENCE.replaced()


class _Unreachable:
    """A NameNode that does not answer."""
    def list_dir(self, uri: str) -> list[str]:
        raise ConnectionError("webhdfs://rm:9870: connection refused")


def test_a_fence_that_cannot_be_read_lets_nothing_through():
    fence = AttemptFence(_Unreachable(), "hdfs://rm/x", 1)   # type: ignore[arg-type]
    with pytest.raises(ConnectionError):
        fence.check("committing")
    assert not fence.replaced(), "unknown is not replaced"


def _graph(out: str):
    p = yf.Pipeline("fenced")
    p.from_arrow(pa.table({"x": [1, 2, 3]})).write_parquet(out)
    return as_received(p.job_graph(Configuration.load()))


def test_a_replaced_attempt_neither_commits_nor_discards_the_recovered_jobs_output(tmp_path):
    old, new = fences(tmp_path, 1, 2)
    old.claim()
    out = str(tmp_path / "out")
    graph = _graph(out)
    theirs = JobOutputs(graph, fence=old)
    assert theirs.setup() is None
    new.claim()                                 # YARN's second attempt recovers the job
    ours = JobOutputs(graph, fence=new)
    assert ours.setup() is None
    staging = next(tmp_path.glob(".out.yarnflow-staging-*"))
    theirs.abort()                              # the old attempt, back: its job failed
    assert (staging / "_temporary").is_dir(), "the recovered job's staging is left alone"
    cause, _ = theirs.commit({v: {} for v in theirs.sinks})
    assert "attempt 1 was replaced by attempt 2" in cause and not (tmp_path / "out").exists()
    assert theirs.setup() is not None and "replaced" in theirs.setup()
    assert ours.commit({v: {} for v in ours.sinks}) is None
    assert (tmp_path / "out").is_dir() and not staging.exists()


def test_a_replaced_attempt_leaves_the_jobs_stored_results_and_logs_no_event(tmp_path):
    old, new = fences(tmp_path, 1, 2)
    old.claim()
    new.claim()
    job_dir = tmp_path / "partitions" / "job-1"
    fs = open_filesystem(f"file://{job_dir}", FileSystemSettings())
    storage = JobStorage(fs, f"file://{job_dir}", events=True, fence=old)
    storage.prepare()
    storage._write("region.0.0.json", b"{}")
    assert not (job_dir / "events").exists()
    storage.discard().result(10)
    assert job_dir.is_dir()
    JobStorage(fs, f"file://{job_dir}", events=True, fence=new).discard().result(10)
    assert not job_dir.exists()


def test_a_replaced_attempt_exits_as_soon_as_it_sees_the_newer_claim(tmp_path):
    from tests.conftest import wait_until
    from yarnflow.appmaster.attempt_fence import REPLACED_EXIT_CODE, exit_when_replaced
    old, new = fences(tmp_path, 1, 2)
    old.claim()
    exits: list[int] = []
    exit_when_replaced(old, 0.01, exits.append)
    assert exits == []
    new.claim()
    wait_until(lambda: exits, 10, "the replaced attempt to exit")
    # never 0: Skein would take the application for finished and delete its staging
    # directory, which the newer attempt's executors are launched from
    assert exits == [REPLACED_EXIT_CODE] and REPLACED_EXIT_CODE != 0
