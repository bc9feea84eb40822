"""The test-only RPC fault injector (``yarnflow.rpc.testing.faults``) on its own: its rules,
what each action does to a call, its seeded draws, and that a job cannot carry it."""
from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import grpc
import pytest

from yarnflow.rpc.testing.faults import FaultInjector, fault_injector, parse_rules


class Call:
    """A stand-in for the call gRPC's continuation starts: a future of the answer."""

    def __init__(self, answer: object) -> None:
        self._future: Future = Future()
        self._future.set_result(answer)

    def result(self, timeout: float | None = None) -> object:
        return self._future.result(timeout)

    def add_done_callback(self, fn) -> None:
        self._future.add_done_callback(lambda _: fn(self))


class Continuation:
    def __init__(self) -> None:
        self.sent: list[object] = []

    def __call__(self, details: object, request: object) -> Call:
        self.sent.append(request)
        return Call(f"answer to {request}")


DETAILS = SimpleNamespace(method="/yarnflow.JobMaster/OfferSlots")


def test_rules_parse_and_a_bad_rule_is_named():
    rules = parse_rules("OfferSlots=duplicate; ResourceManager/RequestSlot=drop:0.5:2; "
                        "*=delay@1.5:0.1")
    assert [(r.method, r.action, r.probability, r.times, r.delay) for r in rules] == [
        ("OfferSlots", "duplicate", 1.0, None, 0.0), ("ResourceManager/RequestSlot", "drop", 0.5, 2, 0.0),
        ("*", "delay", 0.1, None, 1.5)]
    assert rules[1].matches("/yarnflow.ResourceManager/RequestSlot")
    assert not rules[1].matches("/yarnflow.JobMaster/RequestSlot")
    assert fault_injector("", 0) is None          # the default: no interception at all
    for bad in ("OfferSlots", "OfferSlots=lose", "OfferSlots=drop:2", "OfferSlots=delay",
                "OfferSlots=drop:1:0"):
        with pytest.raises(ValueError, match="fault rule"):
            parse_rules(bad)


def test_a_dropped_request_never_arrives_and_fails_as_an_unreachable_peer():
    sent = Continuation()
    call = FaultInjector(parse_rules("OfferSlots=drop:1:1"), 0).intercept_unary_unary(
        sent, DETAILS, "offer")
    assert sent.sent == []
    with pytest.raises(grpc.RpcError) as lost:
        call.result()
    assert lost.value.code() is grpc.StatusCode.UNAVAILABLE


def test_a_lost_answer_follows_a_request_that_arrived():
    sent = Continuation()
    call = FaultInjector(parse_rules("OfferSlots=drop-answer"), 0).intercept_unary_unary(
        sent, DETAILS, "offer")
    assert sent.sent == ["offer"]
    assert call.exception(1).code() is grpc.StatusCode.DEADLINE_EXCEEDED


def test_a_duplicated_request_arrives_twice_and_one_answer_comes_back():
    sent = Continuation()
    call = FaultInjector(parse_rules("OfferSlots=duplicate"), 0).intercept_unary_unary(
        sent, DETAILS, "offer")
    assert sent.sent == ["offer", "offer"] and call.result() == "answer to offer"


def test_times_limit_the_injections_and_the_seed_makes_them_repeatable():
    injector = FaultInjector(parse_rules("OfferSlots=drop:1:2"), 0)
    sent = Continuation()
    for i in range(4):
        injector.intercept_unary_unary(sent, DETAILS, i)
    assert sent.sent == [2, 3] and len(injector.log) == 2

    def draws(seed: int, process: str) -> list[int]:
        injector = FaultInjector(parse_rules("*=drop:0.3"), seed, process)
        sent = Continuation()
        for i in range(40):
            injector.intercept_unary_unary(sent, DETAILS, i)
        return [r for r in range(40) if r not in sent.sent]
    assert draws(7, "te-1") == draws(7, "te-1")
    assert draws(7, "te-1") != draws(7, "te-2")    # executors do not fail in lockstep


def test_a_job_carries_no_configuration_so_its_d_cannot_switch_faults_on_in_a_session():
    """A session's ApplicationMaster gets only the JobGraph of a submitted job; the
    job's -D shapes its plan in the client and goes no further."""
    import pyarrow as pa
    import yarnflow.client as yf
    from yarnflow.conf import Configuration
    from yarnflow.rpc.codec import jobgraph_to_proto
    import copy
    config = Configuration.load(overrides=["test.rpc.faults=*=drop:1"])
    p = yf.Pipeline("j")
    # a function of the standard library: one of this file would ship this file's text
    # (a failure shows the user's source lines), which names the option itself
    p.from_arrow(pa.table({"x": [1]})).map(copy.copy)
    wire = jobgraph_to_proto(p.job_graph(config)).SerializeToString()
    assert b"test.rpc.faults" not in wire and b"drop:1" not in wire
