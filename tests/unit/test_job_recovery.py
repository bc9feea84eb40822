"""Batch job recovery (issue 16, item 3) on a real JobMaster with in-memory executors: a
JobMaster logs each finished pipelined region; the next ApplicationMaster attempt's
JobMaster replays the log, runs only what had not finished, and sends its consumers to
the results on the (here: local) cluster file system."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.unit.fakes import FINISHED, RUNNING, Harness, ManualMainThread
from tests.unit.test_scheduler import op, source
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionState, JobStatus
from yarnflow.conf import Configuration
from yarnflow.core.deployment import stored_result_dir
from yarnflow.core.jobgraph import JobGraph, PartitionType, ScheduleMode, ShipStrategy
from yarnflow.rpc.codec import shuffle_descriptors_from_bytes


def two_stage(p: int = 2) -> JobGraph:
    """source -> (BLOCKING hash) -> reduce -> (PIPELINED) -> sink"""
    graph = JobGraph("two-stage", ScheduleMode.LAZY_FROM_SOURCES)
    src = graph.add_vertex(source("source", p, slot_sharing_group="a"))
    reduce = graph.add_vertex(op("reduce", p, slot_sharing_group="b"))
    sink = graph.add_vertex(op("sink", p, slot_sharing_group="b"))
    graph.connect(src, reduce, ShipStrategy.HASH, ["x"], PartitionType.BLOCKING)
    graph.connect(reduce, sink, ShipStrategy.FORWARD)
    return graph.resolve(1)


def config(store: Path, *more: str) -> Configuration:
    return Configuration.load(overrides=[
        "execution.batch.job-recovery.enabled=true",
        f"execution.batch.partition-store.dir={store}", "restart-strategy.type=none", *more])


def attempt(graph: JobGraph, store: Path) -> Harness:
    h = Harness(graph, config(store), main=ManualMainThread())
    h.start()
    return h


def by_vertex(h: Harness, name: str) -> list:
    return [t for t in h.deployed() if t.info.vertex_name == name]


def events(store: Path, graph: JobGraph) -> list[Path]:
    return sorted((store / graph.job_id / "events").glob("*.json"))


def finish_everything(h: Harness, executor: str) -> None:
    """Run every deployed subtask to the end, answering slot requests as they come."""
    done: set[str] = set()
    for _ in range(10):
        h.offer_pending([executor])
        todo = [t for t in h.deployed() if t.attempt_id not in done]
        if not todo:
            return
        for tdd in todo:
            h.report(tdd.attempt_id, RUNNING)
            h.report(tdd.attempt_id, FINISHED)
            done.add(tdd.attempt_id)


@pytest.fixture
def graph() -> JobGraph:
    return two_stage()


def test_results_go_to_the_store_and_consumers_are_sent_there(graph, tmp_path):
    h = attempt(graph, tmp_path)
    h.offer_pending(["te-1"])
    sources = by_vertex(h, "source")
    assert len(sources) == 2
    produced = sources[0].info.produced[0]
    assert produced.partition_type is PartitionType.BLOCKING
    assert produced.store.startswith(f"file://{tmp_path}/{graph.job_id}/results/")
    assert (tmp_path / graph.job_id).stat().st_mode & 0o777 == 0o700, "the owner's only"
    for tdd in sources:
        h.report(tdd.attempt_id, RUNNING)
        h.report(tdd.attempt_id, FINISHED)
    h.offer_pending(["te-2"])
    reduce = by_vertex(h, "reduce")
    shuffle = shuffle_descriptors_from_bytes(reduce[0].inputs[0].shuffle_descriptors.data)
    assert [stored_result_dir(a) for a in shuffle.data_addresses] == [produced.store]
    assert shuffle.producer_attempt == (0, 0)
    h.close()


def test_a_new_attempt_runs_only_the_regions_that_had_not_finished(graph, tmp_path):
    first = attempt(graph, tmp_path)
    first.offer_pending(["te-1"])
    sources = by_vertex(first, "source")
    for tdd in sources:
        first.report(tdd.attempt_id, RUNNING)
        first.report(tdd.attempt_id, FINISHED)
    wait_until(lambda: len(events(tmp_path, graph)) == 2, 10, "both source regions logged")
    logged = json.loads(events(tmp_path, graph)[0].read_text())["subtasks"][0]
    assert logged["vertex"] == sources[0].info.vertex_id and "RUNNING" in logged["timestamps"]
    first.offer_pending(["te-2"])
    reduce = by_vertex(first, "reduce")
    first.report(reduce[0].attempt_id, RUNNING)        # stage 2 under way...
    first.close()                                      # ...when the ApplicationMaster dies

    second = attempt(graph, tmp_path)
    jm = second.jm
    source_vertex = next(v for v in jm.graph.vertices_topologically() if v.name == "source")
    assert all(v.current.state is ExecutionState.FINISHED and v.current.attempt_number == 0
               for v in source_vertex.task_vertices)
    assert all(v.current.state_timestamps.get(ExecutionState.RUNNING)
               for v in source_vertex.task_vertices), "when they ran, as logged"
    second.offer_pending(["te-3"])
    assert by_vertex(second, "source") == [], "no stage-1 subtask runs again"
    reduce = by_vertex(second, "reduce")
    assert len(reduce) == 2
    shuffle = shuffle_descriptors_from_bytes(reduce[0].inputs[0].shuffle_descriptors.data)
    assert stored_result_dir(shuffle.data_addresses[0]).startswith(f"file://{tmp_path}/")
    finish_everything(second, "te-3")
    assert jm.result.result(timeout=5).status is JobStatus.FINISHED
    assert len(by_vertex(second, "sink")) == 2 and len(by_vertex(second, "source")) == 0
    wait_until(lambda: not (tmp_path / graph.job_id).exists(), 10,
               "the job's results and event log removed at its end")
    second.close()


def test_a_source_is_taken_over_whole_or_not_at_all(graph, tmp_path):
    """Splits go to whichever subtask asks: a source subtask that runs again could not
    tell which its finished siblings had read."""
    first = attempt(graph, tmp_path)
    first.offer_pending(["te-1"])
    sources = by_vertex(first, "source")
    first.report(sources[0].attempt_id, RUNNING)
    first.report(sources[0].attempt_id, FINISHED)
    wait_until(lambda: len(events(tmp_path, graph)) == 1, 10, "one source region logged")
    first.close()

    second = attempt(graph, tmp_path)
    assert all(e.state is ExecutionState.SCHEDULED for e in second.jm.graph.current_executions()
               if e.vertex.job_vertex.name == "source")
    second.offer_pending(["te-2"])
    assert len(by_vertex(second, "source")) == 2
    second.close()


def test_without_job_recovery_blocking_results_stay_with_their_producers(graph, tmp_path):
    h = Harness(graph, Configuration.load(overrides=["restart-strategy.type=none"]),
                main=ManualMainThread())
    h.start()
    h.offer_pending(["te-1"])
    assert all(tdd.info.produced[0].store == "" for tdd in by_vertex(h, "source"))
    h.close()


def test_a_store_that_cannot_be_used_fails_the_job_with_one_line_naming_the_option(graph, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    h = attempt(graph, blocker / "store")
    result = h.jm.result.result(timeout=5)
    assert result.status is JobStatus.FAILED
    assert "cannot be stored in" in result.failure
    assert "execution.batch.partition-store.dir" in result.failure
    assert "\n" not in result.failure and h.deployed() == []
    h.close()
