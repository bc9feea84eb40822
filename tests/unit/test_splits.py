"""The JobMaster's split assigner: local splits first, then unlocated ones and those on
hosts with no reader of the source; another reader's local split only after the
locality wait (a test clock drives it)."""
from __future__ import annotations

from dataclasses import dataclass

import cloudpickle

from yarnflow.appmaster.jobmaster.splits import AskAgain, Assigned, InputSplitAssigner, Locality
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.operators.sources import TableSource
from yarnflow.core.user_code import UserCode


@dataclass(frozen=True)
class Split:
    name: str
    hosts: tuple[str, ...] = ()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def readers_on_a_and_b() -> set[str]:   # the readers' hosts, as the JobMaster passes them
    return {"a", "b"}


def name(answer: object) -> str:
    assert isinstance(answer, Assigned), answer
    return cloudpickle.loads(answer.split).name


def test_a_reader_gets_the_splits_stored_on_its_host_first():
    assigner = InputSplitAssigner([Split("a1", ("a",)), Split("b1", ("b",)), Split("a2", ("a",))])
    first, second = assigner.next_split("a", readers_on_a_and_b, "r"), assigner.next_split("a", readers_on_a_and_b, "r")
    assert {name(first), name(second)} == {"a1", "a2"}
    assert first.locality is second.locality is Locality.LOCAL


def test_unlocated_splits_and_splits_on_hosts_without_a_reader_go_at_once():
    assigner = InputSplitAssigner([Split("x"), Split("c1", ("c",))], locality_wait=3.0,
                                  clock=Clock())
    unlocated = assigner.next_split("a", readers_on_a_and_b, "r")
    assert name(unlocated) == "x" and unlocated.locality is Locality.UNKNOWN
    orphan = assigner.next_split("a", readers_on_a_and_b, "r")   # nobody reads on c
    assert name(orphan) == "c1" and orphan.locality is Locality.REMOTE
    assert assigner.next_split("a", readers_on_a_and_b, "r") is None


def test_another_readers_local_split_is_taken_only_after_the_locality_wait():
    clock = Clock()
    assigner = InputSplitAssigner([Split("b1", ("b",)), Split("b2", ("b",))], locality_wait=3.0,
                                  clock=clock)
    wait = assigner.next_split("a", readers_on_a_and_b, "reader-a")
    assert isinstance(wait, AskAgain) and 0 < wait.seconds <= 0.05
    assert name(assigner.next_split("b", readers_on_a_and_b, "reader-b")) == "b1"   # b's own reader
    clock.now += 2.9
    assert isinstance(assigner.next_split("a", readers_on_a_and_b, "reader-a"), AskAgain)
    clock.now += 0.2
    stolen = assigner.next_split("a", readers_on_a_and_b, "reader-a")
    assert name(stolen) == "b2" and stolen.locality is Locality.REMOTE
    assert assigner.next_split("b", readers_on_a_and_b, "reader-b") is None


def test_stealing_takes_from_the_host_with_most_left_and_the_wait_restarts_after():
    clock = Clock()
    splits = [Split("b1", ("b",)), Split("c1", ("c",)), Split("c2", ("c",)), Split("c3", ("c",))]
    assigner = InputSplitAssigner(splits, locality_wait=1.0, clock=clock)
    readers = lambda: {"a", "b", "c"}  # noqa: E731
    assert isinstance(assigner.next_split("a", readers, "ra"), AskAgain)
    clock.now += 1.0
    assert name(assigner.next_split("a", readers, "ra")).startswith("c")
    assert isinstance(assigner.next_split("a", readers, "ra"), AskAgain)   # waits again


def test_a_split_stored_on_several_hosts_is_given_once():
    assigner = InputSplitAssigner([Split("ab", ("a", "b"))])
    assert name(assigner.next_split("a", readers_on_a_and_b, "ra")) == "ab"
    assert assigner.next_split("b", readers_on_a_and_b, "rb") is None


# --- fair shares (issue 15) ----------------------------------------------------------------
def drain(assigner: InputSplitAssigner, subtask: int) -> int:
    """Splits ``subtask`` gets asking until told to wait or told the end."""
    got = 0
    while isinstance(assigner.next_split("", tuple, f"attempt-{subtask}", subtask), Assigned):
        got += 1
    return got


def test_subtasks_that_start_first_take_their_share_and_the_tail_and_late_ones_get_theirs():
    clock = Clock()
    assigner = InputSplitAssigner([Split(f"s{i}") for i in range(18)], clock=clock,
                                  parallelism=4, fair_share_wait=30.0)
    assert [drain(assigner, 0), drain(assigner, 1)] == [6, 4], \
        "the early ones: their share, and the 2 splits no share needs"
    assert isinstance(assigner.next_split("", tuple, "attempt-0", 0), AskAgain), \
        "the shares held for subtasks 2 and 3, which have not asked yet"
    clock.now += 2                                   # two executors start late
    assert [drain(assigner, 2), drain(assigner, 3)] == [4, 4]
    assert assigner.next_split("", tuple, "attempt-0", 0) is None


def test_the_tail_goes_to_whoever_asks_first_never_a_share_another_is_owed():
    assigner = InputSplitAssigner([Split(f"s{i}") for i in range(10)], parallelism=4,
                                  fair_share_wait=30.0)
    assert [drain(assigner, s) for s in range(4)] == [4, 2, 2, 2]


def test_a_subtask_past_its_share_is_told_the_end_at_once_when_the_rest_is_owed_to_others():
    """No AskAgain round (50 ms idle) when nothing more can be its: every split left is
    owed to subtasks that are reading."""
    assigner = InputSplitAssigner([Split(f"s{i}") for i in range(8)], parallelism=2,
                                  fair_share_wait=30.0)
    assert isinstance(assigner.next_split("", tuple, "attempt-1", 1), Assigned)
    assert drain(assigner, 0) == 4
    assert assigner.next_split("", tuple, "attempt-0", 0) is None, \
        "subtask 1 asked: the 3 splits left are its own"
    assert drain(assigner, 1) == 3


def test_a_share_is_not_held_past_the_wait_for_a_subtask_that_never_asked():
    clock = Clock()
    assigner = InputSplitAssigner([Split(f"s{i}") for i in range(8)], clock=clock,
                                  parallelism=4, fair_share_wait=30.0)
    assert drain(assigner, 0) == 2
    clock.now += 31          # subtasks 1-3 cannot start (no slot while 0 holds its own)
    assert drain(assigner, 0) == 6


def test_a_restarted_subtask_gets_its_share_again():
    assigner = InputSplitAssigner([Split(f"s{i}") for i in range(8)], parallelism=2,
                                  fair_share_wait=30.0)
    assert drain(assigner, 0) == 4 and drain(assigner, 1) == 4
    assert assigner.add_splits_back("attempt-1") == 4
    assert assigner.next_split("", tuple, "attempt-0", 0) is None, \
        "the restarted subtask's share is kept for it: nothing more is the other's"
    assert sum(isinstance(assigner.next_split("", tuple, "attempt-1b", 1), Assigned)
               for _ in range(4)) == 4


def test_splits_handed_back_come_out_again_in_their_first_order():
    assigner = InputSplitAssigner([Split(f"s{i}") for i in range(3)])
    assert [name(assigner.next_split("", tuple, "old")) for _ in range(3)] == ["s0", "s1", "s2"]
    assigner.add_splits_back("old")
    assert [name(assigner.next_split("", tuple, "new")) for _ in range(3)] == ["s0", "s1", "s2"]


def test_an_in_memory_table_travels_in_its_splits_not_in_every_deployment(tmp_path):
    """A from_arrow source's subtasks are deployed without the table; each split carries
    its own rows, and together they are the table, once."""
    import pyarrow as pa

    import yarnflow.client as yf
    from tests.unit.fakes import Harness, ManualMainThread
    from yarnflow.conf import Configuration
    from yarnflow.core.status import ExecutionState

    table = pa.table({"x": pa.array(range(100_000), pa.int64())})
    p = yf.Pipeline("table", parallelism=2)
    p.from_arrow(table, name="src").write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(Configuration.load())
    h = Harness(graph, Configuration.load(), main=ManualMainThread())
    h.start()
    h.offer_pending(["te-1"])
    sources = [tdd for tdd in h.deployed() if tdd.info.vertex_name == "src -> parquet-sink"]
    assert len(sources) == 2
    for tdd in sources:
        assert tdd.info.operator.load().head.table is None
        assert len(tdd.info.operator.serialized()) < 10_000, "the table is not in the deployment"
        h.report(tdd.attempt_id, ExecutionState.RUNNING)
    rows: list[int] = []
    requests = {tdd.attempt_id: 0 for tdd in sources}
    while requests:                  # the two subtasks ask in turn until both are done
        for tdd in sources:
            if tdd.attempt_id not in requests:
                continue
            answer = h.call(h.jm.request_next_input_split, tdd.info.vertex_id, tdd.attempt_id,
                            requests[tdd.attempt_id])
            requests[tdd.attempt_id] += 1
            if answer is None:
                del requests[tdd.attempt_id]
            elif not isinstance(answer, AskAgain):
                split = cloudpickle.loads(answer)
                rows.extend(pa.ipc.open_stream(split.ipc).read_all()["x"].to_pylist())
    assert sorted(rows) == list(range(100_000)), "every row once"
    h.close()


# --- where source subtasks should run (asked of YARN before any of them reads) ----------
def test_subtasks_are_spread_over_the_hosts_in_proportion_to_what_they_store():
    from yarnflow.appmaster.jobmaster.splits import spread_over_hosts
    thirds = [("nm1", "nm2"), ("nm2", "nm3"), ("nm3", "nm1")] * 4     # replication 2 over 3
    assert sorted(spread_over_hosts(thirds, 3)) == ["nm1", "nm2", "nm3"]
    assert len(set(spread_over_hosts(thirds, 2))) == 2
    skewed = [("nm1",)] * 6 + [("nm2",)] * 3
    assert sorted(spread_over_hosts(skewed, 3)) == ["nm1", "nm1", "nm2"]
    assert spread_over_hosts([(), ()], 2) == ["", ""], "splits that name no host: anywhere"


def test_the_assigner_names_each_subtasks_host():
    assigner = InputSplitAssigner([Split("a1", ("a",)), Split("b1", ("b",))], parallelism=2)
    assert sorted(assigner.host_for(i) for i in range(2)) == ["a", "b"]
    assert assigner.host_for(5) == ""


class HostedSource(TableSource):
    """A source of two splits, one stored on nm1 and one on nm2."""

    def __init__(self) -> None:
        super().__init__(None)

    def create_input_splits(self, parallelism: int, max_split_bytes: int = 0) -> list[Split]:
        return [Split("a1", ("nm1",)), Split("b1", ("nm2",))]

    def for_readers(self) -> "HostedSource":
        return self


def hosted_chain() -> JobGraph:
    from tests.unit.test_scheduler import chain
    graph = chain(2)
    next(v for v in graph.vertices.values() if v.num_inputs == 0).operator = UserCode.of(HostedSource())
    return graph


def test_a_source_subtasks_slot_request_names_the_host_of_its_splits():
    from tests.unit.fakes import Harness, ManualMainThread
    from yarnflow.conf import Configuration
    h = Harness(hosted_chain(), Configuration.load(overrides=["restart-strategy.type=none"]),
                main=ManualMainThread())
    try:
        h.start()
        assert sorted(h.rm.hosts.values()) == [("nm1",), ("nm2",)]
    finally:
        h.close()


def test_only_a_first_attempts_input_host_is_asked_for_not_a_producers_or_a_restarts():
    """A consumer's producer may have run on a host that is gone, and so may a
    restarted source's planned host: no container is asked on either."""
    from tests.unit.fakes import RUNNING, Harness, ManualMainThread
    from yarnflow.conf import Configuration
    h = Harness(hosted_chain(), Configuration.load(overrides=[
        "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.attempts=3",
        "restart-strategy.fixed-delay.delay=0 s"]), main=ManualMainThread())
    try:
        h.start()
        assert sorted(h.rm.hosts.values()) == [("nm1",), ("nm2",)]
        h.offer_pending(["te-1", "te-2"], {"te-1": "nm1", "te-2": "nm2"})
        h.rm.hosts.clear()
        for tdd in h.deployed():
            h.report(tdd.attempt_id, RUNNING)
        h.call(h.jm.disconnect_task_executor, "te-1", "lost")
        h.jm.main.advance(1)
        assert h.rm.hosts and all(hosts == () for hosts in h.rm.hosts.values()), h.rm.hosts
    finally:
        h.close()
