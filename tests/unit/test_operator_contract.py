"""One operator contract (issue 82): ``OperatorContext`` declares everything an
operator may use, every context implements all of it, no operator asks its context
whether it has something, and one memory policy says when an operator that holds data
must copy, merge or spill."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pyarrow as pa
import pytest

from yarnflow.core.memory import (COPY_SHARE, KEEP_SHARE, READ_SHARE, Held, OperatorMemory,
                                  fits_a_copy, retained_bytes, run_batch_bytes)
from yarnflow.core.operators.chain import _Chained
from yarnflow.core.operators.context import NoStateInBoundedJobs, OperatorContext
from yarnflow.taskexecutor.task import _Context as TaskContext
from tests.packaging import ROOT
from tests.unit.fakes import TestingOperatorContext


def members(protocol: type) -> set[str]:
    """What a Protocol declares: its annotated attributes and its methods/properties."""
    declared = set(protocol.__dict__.get("__annotations__", {}))
    declared |= {name for name, value in protocol.__dict__.items()
                 if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    return declared


def provided(cls: type) -> set[str]:
    """What a class gives its instances: its methods and properties, and the attributes
    its ``__init__`` assigns (read from the source, so no instance is needed)."""
    names = {name for name in dir(cls) if not name.startswith("_")}
    tree = ast.parse(inspect.getsource(cls.__init__).strip().replace("\n    ", "\n"))
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            for element in ast.walk(target):
                if isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name) \
                        and element.value.id == "self":
                    names.add(element.attr)
    return names


def test_the_contract_declares_what_operators_use_and_unbounded_jobs_will():
    declared = members(OperatorContext)
    assert {"input", "emit", "emit_to", "next_split", "memory", "operator_counters",
            "key_range", "collect_result", "spark", "cancelled", "state", "timers",
            "subtask_index", "batch_rows", "build_input"} <= declared


@pytest.mark.parametrize("context", [TaskContext, _Chained, TestingOperatorContext],
                         ids=["task", "chained", "testing"])
def test_every_context_implements_the_whole_contract(context):
    missing = members(OperatorContext) - provided(context)
    assert not missing, f"{context.__qualname__} lacks {sorted(missing)}"


def test_the_check_would_see_a_context_that_lacks_a_member():
    class Partial:
        def __init__(self) -> None:
            self.subtask_index = 0

        def emit(self, data: object) -> None: ...
    assert {"input", "memory", "state"} <= members(OperatorContext) - provided(Partial)


def test_no_operator_asks_its_context_whether_it_has_something():
    probes = []
    for path in sorted((ROOT / "core" / "operators").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("getattr", "hasattr") and node.args \
                    and "ctx" in ast.unparse(node.args[0]):
                probes.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not probes, "operators probing their context:\n" + "\n".join(probes)


def test_a_chained_operator_reaches_the_tasks_counters_routes_and_memory():
    budget = OperatorMemory.fixed(1000)
    task = TestingOperatorContext([], memory=budget)
    inner = _Chained(task, "inner", task.emit)
    assert inner.memory() is budget
    assert [c.name for c in inner.operator_counters(["a", "b"])] == ["a", "b"]
    inner.emit_to(pa.record_batch({"x": [1]}), frozenset({"edge.0"}))
    assert list(task.routed) == [frozenset({"edge.0"})]
    inner.key_range("a", "z")
    assert task.key_ranges == [("a", "z")]


def test_a_bounded_jobs_task_has_no_state_or_timers_and_says_so_in_one_line():
    task = TestingOperatorContext([], vertex_name="window")
    for ask in (task.state, task.timers, _Chained(task, "window", task.emit).state):
        with pytest.raises(NoStateInBoundedJobs) as raised:
            ask()
        message = str(raised.value)
        assert "\n" not in message and "'window'" in message and "Fix:" in message


# --- the memory policy --------------------------------------------------------------

def test_held_data_is_counted_as_it_comes_and_let_go_at_once():
    memory = OperatorMemory.fixed(10_000)
    held: Held[pa.RecordBatch] = Held(memory)
    batch = pa.record_batch({"x": pa.array(range(100), pa.int64())})
    held.add(batch)
    held.add(batch.slice(0, 10))          # a slice keeps its whole buffers
    assert held.rows == 110 and held.bytes == 2 * retained_bytes(batch)
    assert held.take() == [batch, batch.slice(0, 10)]
    assert not held and held.bytes == held.rows == 0


@pytest.mark.parametrize("limit", [1000, 4096, 10_000])
def test_the_thresholds_are_the_named_shares_of_the_limit(limit):
    memory = OperatorMemory.fixed(limit)
    held: Held[pa.Table] = Held(memory)
    held.bytes = limit // COPY_SHARE
    assert not held.too_big_to_copy() and fits_a_copy(held.bytes, memory)
    held.bytes += 1
    assert held.too_big_to_copy() and not fits_a_copy(held.bytes, memory)
    held.bytes = limit // KEEP_SHARE
    assert not held.more_than_kept()
    held.bytes += 1
    assert held.more_than_kept() and not held.over_limit()
    held.bytes = limit + 1
    assert held.over_limit()
    assert run_batch_bytes(memory, 32) == limit // (READ_SHARE * 32)


def test_the_limit_is_read_each_time_so_a_share_that_shrinks_is_seen():
    limit = [4000]
    held: Held[pa.Table] = Held(OperatorMemory(lambda: limit[0]))
    held.bytes = 1500
    assert not held.too_big_to_copy()
    limit[0] = 2000                       # another operator started in the slot
    assert held.too_big_to_copy()


def test_sort_join_and_aggregate_use_the_policy_not_their_own_thresholds():
    """The shares are named once (core/memory.py): no operator divides its limit."""
    found = []
    for name in ("sort.py", "join.py", "aggregate.py"):
        source = Path(ROOT / "core" / "operators" / name).read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) \
                    and "limit" in ast.unparse(node.left):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found
