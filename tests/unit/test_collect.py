"""The collect sink's subtask logic and the Dispatcher's keeping of a collected result
(issue 56), with a manual clock: nothing here sleeps."""
from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from tests.unit.fakes import ManualMainThread
from yarnflow.appmaster.dispatcher.dispatcher import Dispatcher
from yarnflow.client.collect import table_of
from yarnflow.conf import Configuration
from yarnflow.core.details import JobDetails, JobResult
from yarnflow.core.errors import UnknownJob
from yarnflow.core.ids import JobID
from yarnflow.core.operators.collect import CollectSink, ResultTooLarge
from yarnflow.core.status import JobStatus
from tests.unit.fakes import TestingOperatorContext

ROWS = pa.table({"k": pa.array(range(1000), pa.int64()), "s": [str(i) for i in range(1000)]})


def run(sink: CollectSink, batches: list[pa.RecordBatch]) -> TestingOperatorContext:
    ctx = TestingOperatorContext(vertex_name="collect")
    processor = sink.open(ctx)
    try:
        for batch in batches:
            processor.process(batch)
        processor.finish()
    finally:
        processor.close()
    return ctx


def test_a_subtasks_rows_come_back_whole_and_in_order():
    ctx = run(CollectSink(2**20), ROWS.to_batches(max_chunksize=100))
    assert ctx.collected is not None
    assert table_of((ctx.collected,)).equals(ROWS)


def test_subtasks_without_rows_give_the_planned_columns_or_nothing():
    planned = CollectSink(2**20).planned([ROWS.schema])
    assert planned.schema([ROWS.schema]) == ROWS.schema
    empty = run(planned, []).collected
    assert empty and table_of((empty,)).schema == ROWS.schema
    assert run(CollectSink(2**20), []).collected is None       # columns unknown: nothing
    # in subtask order, an empty one between
    first, second = ROWS.slice(0, 10), ROWS.slice(10, 5)
    parts = (run(planned, first.to_batches()).collected, b"", run(planned, second.to_batches()).collected)
    assert table_of(parts).equals(ROWS.slice(0, 15))


def test_a_subtask_past_the_limit_fails_at_once_naming_the_option():
    with pytest.raises(ResultTooLarge) as failed:
        run(CollectSink(4096), ROWS.to_batches(max_chunksize=100))
    message = str(failed.value)
    assert "over pipeline.collect.max-result-size (4.0 KB)" in message
    assert "in one subtask alone" in message and "Fix: write it with write_parquet" in message


def dispatcher(timeout: str = "60 s") -> tuple[Dispatcher, ManualMainThread]:
    main = ManualMainThread()
    config = Configuration.load(overrides=[f"pipeline.collect.result-timeout={timeout}"])
    components = SimpleNamespace(config=config)
    return Dispatcher(components, None, None, main=main), main   # type: ignore[arg-type]


def ended(dispatcher: Dispatcher, job: str, parts: tuple[bytes, ...]) -> None:
    details = JobDetails(JobID(job), "job", JobStatus.FINISHED)
    dispatcher._archive_result(JobResult(JobID(job), JobStatus.FINISHED, "", "", details, parts))


def test_a_result_waits_for_its_client_and_a_fetched_one_only_for_a_retry():
    d, main = dispatcher()
    ended(d, "a", (b"1", b"2"))
    assert not d.wait_fetched(JobID("a"), 0)             # not fetched yet
    assert d.fetch_collected(JobID("a")) == (b"1", b"2")
    assert d.wait_fetched(JobID("a"), 0)
    main.clock.advance(20)
    assert d.fetch_collected(JobID("a")) == (b"1", b"2")  # a retried fetch
    main.clock.advance(11)
    with pytest.raises(UnknownJob, match="pipeline.collect.result-timeout"):
        d.fetch_collected(JobID("a"))


def test_an_unfetched_result_is_dropped_after_the_timeout_and_others_do_not_wait():
    d, main = dispatcher("60 s")
    ended(d, "a", (b"x",))
    ended(d, "plain", ())                                # a job that did not collect
    assert d.wait_fetched(JobID("plain"), 0)
    main.clock.advance(61)
    ended(d, "b", (b"y",))                               # each ending drops the expired
    assert "a" not in d._collected and "b" in d._collected
    with pytest.raises(UnknownJob):
        d.fetch_collected(JobID("a"))


def test_a_fetch_as_the_job_ends_waits_for_its_jobmaster_to_announce_the_end():
    """The client saw FINISHED in the running JobMaster's details; the JobMaster frees
    its slots before it announces the end, with the result."""
    d, _ = dispatcher()

    class Ending:
        job_id = JobID("c")

        def wait(self, timeout: float) -> None:
            assert timeout > 0
            ended(d, "c", (b"rows",))          # the end announced meanwhile
    d._running["c"] = Ending()                 # type: ignore[assignment]
    assert d.fetch_collected(JobID("c")) == (b"rows",)
