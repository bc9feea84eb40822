"""The adaptive parallelism decider (appmaster/jobmaster/scheduler/adaptivebatch/
decider.py): bytes over the per-task volume within the bounds, contiguous ranges of
about equal bytes shared by every hashed input, a broadcast input read whole."""
from __future__ import annotations

import pytest

from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.decider import (
    AutoParallelism, InputBytes, balanced_ranges, decide, even_ranges)

MB = 2**20


def hashed(result: str, *partitions: tuple[int, ...] | None) -> InputBytes:
    width = next(len(p) for p in partitions if p is not None)
    return InputBytes(result, False, width, partitions)


def test_tiny_inputs_get_the_minimum_and_one_range_over_every_subpartition():
    decision = decide([hashed("r", (10,) * 8, (5,) * 8)], 4, AutoParallelism(1, 8, 16 * MB))
    assert decision.parallelism == 1 and decision.input_bytes == 120
    [read] = decision.reads["r"]
    assert (read.partitions, read.subpartitions) == (range(2), range(8))
    assert "120 B" in decision.reason and "1..8" in decision.reason


def test_bytes_over_the_volume_per_task_within_the_bounds():
    sizes = (4 * MB,) * 16           # 64 MB from one producer, 16 MB per task: 4
    assert decide([hashed("r", sizes)], 2, AutoParallelism(1, 16, 16 * MB)).parallelism == 4
    assert decide([hashed("r", sizes)], 2, AutoParallelism(1, 3, 16 * MB)).parallelism == 3
    assert decide([hashed("r", sizes)], 2, AutoParallelism(6, 16, 16 * MB)).parallelism == 6


def test_ranges_are_contiguous_cover_everything_and_balance_the_bytes():
    sizes = [1, 1, 1, 50, 1, 1, 30, 30, 1, 1]
    ranges = balanced_ranges(sizes, 3)
    assert [j for r in ranges for j in r] == list(range(len(sizes)))
    assert len(ranges) <= 3
    # the best split has its largest range at 54 bytes (0..4 | 4..7 | 7..10 or alike)
    assert max(sum(sizes[j] for j in r) for r in ranges) <= 62
    assert even_ranges(10, 3) == [range(0, 4), range(4, 7), range(7, 10)]


def test_every_hashed_input_gets_the_same_ranges_and_a_broadcast_is_read_whole():
    left = hashed("left", (8 * MB, 8 * MB, 8 * MB, 8 * MB))
    right = hashed("right", (1, 1, 1, 1), (1, 1, 1, 1))
    small = InputBytes("small", True, 1, ((100,), (100,), (100,)))
    decision = decide([left, right, small], 1, AutoParallelism(1, 4, 16 * MB))
    assert decision.parallelism == 2
    assert [r.subpartitions for r in decision.reads["left"]] == \
        [r.subpartitions for r in decision.reads["right"]] == [range(0, 2), range(2, 4)]
    assert [r.partitions for r in decision.reads["right"]] == [range(2), range(2)]
    assert [(r.partitions, r.subpartitions) for r in decision.reads["small"]] == \
        [(range(3), range(1))] * 2
    assert decision.input_bytes == 32 * MB + 8        # the broadcast side decides nothing


def test_a_producer_that_reported_no_bytes_leaves_the_configured_parallelism():
    decision = decide([hashed("r", (5,) * 8, None)], 3, AutoParallelism(1, 8, 16 * MB))
    assert decision.parallelism == 3 and decision.input_bytes is None
    assert "configured parallelism 3" in decision.reason


def test_empty_inputs_get_the_minimum():
    decision = decide([hashed("r", (0,) * 8)], 4, AutoParallelism(2, 8, 16 * MB))
    assert decision.parallelism == 2
    assert [r.subpartitions for r in decision.reads["r"]] == [range(0, 4), range(4, 8)]


def test_an_adaptive_vertex_without_a_hashed_input_is_refused():
    with pytest.raises(ValueError, match="hash or rebalance"):
        decide([InputBytes("b", True, 1, ((1,),))], 1, AutoParallelism())


def test_which_operators_the_client_leaves_to_the_run_time():
    """After a BLOCKING redistribution and unset: decided; FORWARD after a decided one:
    follows; set_parallelism, a PIPELINED exchange, or a FORWARD edge into a fixed
    operator: fixed."""
    import pyarrow as pa

    import yarnflow.client as yf
    from yarnflow.conf import Configuration

    config = Configuration.load(overrides=["execution.batch.adaptive.enabled=true",
                                           "parallelism.default=4"])
    table = pa.table({"k": [1, 2], "v": [3, 4]})
    p = yf.Pipeline("marks")
    src = p.from_arrow(table)
    src.aggregate(["k"], [("v", "sum")], name="decided").map(lambda b: b, name="follows") \
       .write_parquet("/tmp/never-a", name="sink-a")
    src.aggregate(["k"], [("v", "sum")], name="set").set_parallelism(2) \
       .write_parquet("/tmp/never-b", name="sink-b")
    pinned = src.aggregate(["k"], [("v", "sum")], name="pinned")
    pinned.map(lambda b: b, name="fixed").set_parallelism(4).write_parquet("/tmp/never-c",
                                                                          name="sink-c")
    graph = p.job_graph(config)
    adaptive = {v.name for v in graph.vertices.values() if v.adaptive}
    # sink-b reads 'set' (2) through a rebalance: its bytes decide it too
    assert adaptive == {"decided -> follows -> sink-a", "sink-b"}, "a chain is decided as one"
    assert graph.schedule_mode.name == "LAZY_FROM_SOURCES"
    from yarnflow.client.explain import plan_json, plan_renderable
    from rich.console import Console
    planned = {v["name"]: v["adaptive"] for v in plan_json(graph, config)["vertices"]}
    assert planned["decided -> follows -> sink-a"] and not planned["set"]
    console = Console(record=True, width=400)
    console.print(plan_renderable(graph, config))
    shown = console.export_text()
    assert "auto: parallelism decided at run time" in shown and "64 MB, 128 MB" in shown
    piped = yf.Pipeline("piped", exchange="pipelined")
    piped.from_arrow(table).aggregate(["k"], [("v", "sum")]).write_parquet("/tmp/never-d")
    assert not any(v.adaptive for v in piped.job_graph(config).vertices.values())


# --- joins -------------------------------------------------------------------------------
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.join_decider import (  # noqa: E402
    SkewSettings, decide_join)
from yarnflow.core.jobgraph import AdaptiveJoin  # noqa: E402

NAMES = ("facts", "dims")


def test_a_side_that_measured_small_is_broadcast_and_built_and_the_other_cut_alone():
    facts = hashed("facts", (2 * MB,) * 8, (2 * MB,) * 8)           # 32 MB
    dims = hashed("dims", (100,) * 8, (100,) * 8, (100,) * 8)      # 2.4 KB
    decision = decide_join([facts, dims], NAMES, 4, AutoParallelism(1, 8, 8 * MB),
                           AdaptiveJoin((0, 1), (0, 1), 10 * MB), SkewSettings())
    assert decision.strategy == "broadcast" and decision.build_input == 1
    assert decision.parallelism == 4
    assert [r.subpartitions for r in decision.reads["facts"]] == \
        [range(0, 2), range(2, 4), range(4, 6), range(6, 8)]
    assert all((r.partitions, r.subpartitions) == (range(3), range(8))
               for r in decision.reads["dims"])
    assert "join switched to broadcast: dims measured 2.3 KB" in decision.reason


def test_sides_over_the_threshold_are_hashed_at_the_same_ranges_and_the_smaller_built():
    left = hashed("facts", (2 * MB,) * 8)
    right = hashed("dims", (MB,) * 8)
    decision = decide_join([left, right], NAMES, 4, AutoParallelism(1, 8, 8 * MB),
                           AdaptiveJoin((0, 1), (0, 1), 1 * MB), SkewSettings())
    assert decision.strategy == "hash" and decision.build_input == 1
    assert [r.subpartitions for r in decision.reads["facts"]] == \
        [r.subpartitions for r in decision.reads["dims"]]
    assert decision.parallelism == 3
    # a left outer join never broadcasts or builds its left side, however small
    outer = decide_join([hashed("facts", (1,) * 8), right], NAMES, 4,
                        AutoParallelism(1, 8, 8 * MB), AdaptiveJoin((1,), (0,), 1 * MB),
                        SkewSettings())
    assert outer.strategy == "hash" and outer.build_input == 1


def test_a_skewed_partition_is_split_by_producer_and_the_other_side_read_by_each_piece():
    hot = 3                      # a third of the facts in subpartition 3, from 4 producers
    facts = hashed("facts", *[tuple(8 * MB if j == hot else MB // 4 for j in range(16))] * 4)
    dims = hashed("dims", *[tuple(50_000 for _ in range(16))] * 2)
    decision = decide_join([facts, dims], NAMES, 4, AutoParallelism(1, 64, 8 * MB),
                           AdaptiveJoin((0, 1), (0, 1), 0), SkewSettings(True, 4.0, MB))
    assert decision.strategy == "hash" and decision.split == 1
    pieces = [(f, d) for f, d in zip(decision.reads["facts"], decision.reads["dims"])
              if f.subpartitions == range(hot, hot + 1)]
    assert len(pieces) == 4                             # one producer's hot rows each
    assert sorted(f.partitions.start for f, _ in pieces) == [0, 1, 2, 3]
    assert all(d.partitions == range(2) for _, d in pieces)     # the dims there, whole
    covered = [(k, j) for f in decision.reads["facts"] for k in f.partitions
               for j in f.subpartitions]
    assert sorted(covered) == [(k, j) for k in range(4) for j in range(16)]   # each once
    per_consumer = [sum(8 * MB if j == hot else MB // 4 for _ in f.partitions
                        for j in f.subpartitions) for f in decision.reads["facts"]]
    assert max(per_consumer) / (sum(per_consumer) / len(per_consumer)) <= 1.3
    off = decide_join([facts, dims], NAMES, 4, AutoParallelism(1, 64, 8 * MB),
                      AdaptiveJoin((0, 1), (0, 1), 0), SkewSettings(False))
    assert off.split == 0


def test_one_producers_share_of_a_skewed_partition_is_dealt_out_by_batch():
    """All of the hot key's rows came from one producer (its rows sorted by key): the
    share is sliced, every slice a subtask, each reading the dims there whole."""
    hot = 5
    facts = hashed("facts", tuple(24 * MB if j == hot else MB // 4 for j in range(16)),
                   *[tuple(MB // 4 for _ in range(16))] * 3)
    dims = hashed("dims", tuple(10_000 for _ in range(16)))
    decision = decide_join([facts, dims], NAMES, 4, AutoParallelism(1, 64, 4 * MB),
                           AdaptiveJoin((0, 1), (0, 1), 0), SkewSettings(True, 4.0, MB))
    sliced = [f for f in decision.reads["facts"] if f.slices > 1]
    assert sliced and {(f.partitions, f.subpartitions) for f in sliced} == {(range(0, 1),
                                                                            range(hot, hot + 1))}
    assert sorted(f.slice for f in sliced) == list(range(sliced[0].slices))   # each batch once
    assert decision.split == 1


def test_an_adaptive_per_job_application_declares_the_sizes_once_each_not_per_host(tmp_path):
    """The sizes a stage may get are Skein services of their own, instances 0; only the
    plan's own sizes get a service per host (for source subtasks reading local splits)."""
    import pyarrow as pa
    import skein

    import yarnflow.client as yf
    from yarnflow.client.targets.yarn import build_spec, plan_containers
    from yarnflow.conf import Configuration
    from yarnflow.rpc.security import generate_application_credentials

    # an interpreter on the nodes, not the client's virtual environment packed: CI's
    # Python is not in one, and packing it is not what this test is about
    cfg = Configuration.load(overrides=["execution.batch.adaptive.enabled=true",
                                        "execution.batch.adaptive.slot-memory.max=512m",
                                        "yarn.python=/opt/python/bin/python3"])
    p = yf.Pipeline("sized")
    p.from_arrow(pa.table({"k": [1, 2]})).rebalance().map(lambda b: b).write_parquet("/tmp/never-e")
    graph = p.job_graph(cfg)
    creds = generate_application_credentials()
    spec = build_spec(graph, cfg, plan_containers(graph, cfg), tmp_path,
                      skein.Security(cert_bytes=creds.cert_pem, key_bytes=creds.key_pem),
                      ["nm1", "nm2"])
    memory = sorted(s.resources.memory for s in spec.services.values() if not s.nodes)
    assert memory == [64 + 256, 128 + 256, 256 + 256, 512 + 256, 1024 + 256], memory
    hosted = {s.resources.memory for s in spec.services.values() if s.nodes}
    assert hosted == {1024 + 256}          # the sources' default slots, on each host
    assert all(s.instances == 0 for s in spec.services.values())


def test_a_jobs_own_adaptive_options_travel_with_its_graph_and_apply_over_a_sessions():
    """A session's JobMaster runs with the session's configuration: the options that say
    how one job runs come with the job (Flink's job-level configuration), the ones that
    say how the application is deployed do not."""
    import pyarrow as pa

    import yarnflow.client as yf
    from yarnflow.conf import ConfigError, Configuration, options
    from yarnflow.conf.job_level import for_job
    from yarnflow.rpc.codec import jobgraph_from_proto, jobgraph_to_proto

    client = Configuration.load(overrides=[
        "execution.batch.adaptive.enabled=true",
        "execution.batch.adaptive.auto-parallelism.min-parallelism=3",
        "execution.batch.adaptive.slot-memory.exact=true",
        "table.optimizer.skewed-join-optimization.strategy=none",
        "pipeline.batch-rows=7", "parallelism.default=7"])
    p = yf.Pipeline("job-level")
    p.from_arrow(pa.table({"k": [1, 2]})).rebalance().map(lambda b: b).write_parquet("/tmp/never-j")
    received = jobgraph_from_proto(jobgraph_to_proto(p.job_graph(client)), load_operators=False)
    assert received.job_configuration == {
        "execution.batch.adaptive.auto-parallelism.min-parallelism": "3",
        "execution.batch.adaptive.enabled": "true",
        "pipeline.batch-rows": "7",
        "table.optimizer.skewed-join-optimization.strategy": "none"}

    session = Configuration.load(overrides=["execution.batch.adaptive.slot-memory.exact=false",
                                            "parallelism.default=2"])
    job = for_job(session, {**received.job_configuration, "parallelism.default": "9",
                            "execution.batch.adaptive.slot-memory.exact": "true"})
    assert job.get(options.ADAPTIVE_ENABLED) and job.get(options.ADAPTIVE_MIN_PARALLELISM) == 3
    assert job.get(options.SKEWED_JOIN_STRATEGY) == "none"
    assert job.get(options.BATCH_ROWS) == 7, "its sources' batches: the job's own"
    assert job.get(options.DEFAULT_PARALLELISM) == 2, "not a job-level option: the session's"
    assert not job.get(options.ADAPTIVE_SLOT_MEMORY_EXACT), "the session's warm executors serve"
    assert not session.get(options.ADAPTIVE_ENABLED), "the session's own is left as it was"
    with pytest.raises(ConfigError, match="min-parallelism"):
        for_job(session, {"execution.batch.adaptive.auto-parallelism.min-parallelism": "none"})
