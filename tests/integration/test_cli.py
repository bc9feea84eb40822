"""The ``yarnflow`` CLI as a user runs it: the main example, exit statuses, errors."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
FAST = ["-D", "heartbeat.interval=0.5 s", "-D", "resourcemanager.taskmanager-timeout=2 s"]
NO_RESTART = ["-D", "restart-strategy.type=none"]


def yarnflow(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "yarnflow.client.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def main_run(tmp_path_factory):
    """The README's main command at its default size (200,000 rows) on fresh data:
    generates it with PySpark, then runs."""
    tmp = tmp_path_factory.mktemp("main-example")
    data, out = tmp / "data", tmp / "out"
    proc = yarnflow("run", *FAST, "examples/skewed_join.py", "--",
                    "--data", str(data), "--out", str(out))
    return proc, data, out


def test_main_example_output_equals_pyarrow(main_run):
    proc, data, out = main_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FINISHED" in proc.stdout and "max/mean" in proc.stdout   # the skew column
    spec = importlib.util.spec_from_file_location("skewed_join", ROOT / "examples" / "skewed_join.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    got = pq.read_table(out).sort_by("InstrumentId")
    want = example.reference(str(data)).sort_by("InstrumentId")
    assert got.num_rows == 200_000
    assert got.select(want.column_names).equals(want)


def test_main_example_join_is_balanced(main_run):
    """Seed 003's point, on the README's own command (issue 15): the summary's join
    input max/mean is at most 1.1 (it printed 1.62 before split shares were fair)."""
    proc, _, _ = main_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("│ join "))
    cells = [cell.strip() for cell in row.strip().strip("│").split("│")]
    assert float(cells[6]) <= 1.1, row           # the "in max/mean" column


def test_explain_prints_the_plan_with_estimates_and_the_join_decision(main_run):
    _, data, _ = main_run
    args = ["examples/skewed_join.py", "--", "--data", str(data)]
    proc = yarnflow("explain", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = " ".join(proc.stdout.split())
    assert "FORWARD <- instruments" in text and "BROADCAST <- currency-code" in text
    assert "200,000" in text and "492" in text           # estimated rows, from the footers
    assert "Parquet footers" in text and "as its input" in text   # where each estimate came from
    assert "join: BROADCAST join, inner — currency-code is estimated at" in text
    assert "FINISHED" not in text                        # nothing ran
    hashed = yarnflow("explain", "-D", "planner.broadcast-threshold=100b", *args)
    assert hashed.returncode == 0, hashed.stdout + hashed.stderr
    text = " ".join(hashed.stdout.split())
    assert "HASH(CurrencyId) <- instruments" in text and "join: HASH join, inner — no side within" in text


def test_explain_passes_shows_what_each_planner_pass_decided(main_run):
    """`yarnflow explain --passes` (issue 82): the plan after each pass, in order; the
    join's strategy appears at the join-strategies pass, not before."""
    _, data, _ = main_run
    proc = yarnflow("explain", "--passes", "examples/skewed_join.py", "--", "--data", str(data))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passes = [line[len("after "):-1] for line in proc.stdout.splitlines()
              if line.startswith("after ")]
    assert passes == ["bind", "streaming", "local-steps", "schemas", "estimates", "join-strategies",
                      "parallelism", "exchanges", "pipeline-breakers", "adaptive", "validate",
                      "chaining"]
    blocks = proc.stdout.split("after ")
    assert "join=broadcast" not in blocks[passes.index("estimates") + 1]
    assert "join=broadcast build=1" in blocks[passes.index("join-strategies") + 1]
    assert "currency-code -> join: BROADCAST" in blocks[passes.index("exchanges") + 1]
    assert "join: BROADCAST join, inner" in " ".join(proc.stdout.split())   # then the plan


def test_explain_json_is_the_plan_as_data(main_run):
    """`yarnflow explain --json` (issue 15): the same plan, parseable; the summary of
    the run names the join's inputs apart."""
    proc, data, _ = main_run
    assert "join reads instruments (forward) 200,000, max/mean" in proc.stdout
    assert "currency-code (broadcast)" in proc.stdout
    explained = yarnflow("explain", "--json", "examples/skewed_join.py", "--", "--data", str(data))
    assert explained.returncode == 0, explained.stdout + explained.stderr
    plan = json.loads(explained.stdout)
    join = next(v for v in plan["vertices"] if "join" in v["operators"])
    assert join["name"] == "join -> sink" and join["operators"] == ["join", "sink"]
    assert [(i["producer"], i["ship"]) for i in join["inputs"]] == \
        [("instruments", "FORWARD"), ("currency-code", "BROADCAST")]
    assert join["estimate"]["rows"] == 200_000
    assert plan["joins"][0]["strategy"] == "BROADCAST" and plan["joins"][0]["broadcast_input"] == 1
    slots = plan["shared_slots"]["default"]
    assert len(slots) == 2 and sum(w["executors"] for w in plan["worker_specs"]) == 2


def test_failing_job_exits_1_and_names_the_error(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text(textwrap.dedent(f"""
        import pyarrow as pa, yarnflow.client as yf
        def explode(batch):
            raise KeyError("no column 'price'")
        p = yf.Pipeline("boom")
        p.from_arrow(pa.table({{"x": [1]}})).map(explode).write_parquet({str(tmp_path / 'o')!r})
        p.execute()
    """))
    proc = yarnflow("run", *FAST, *NO_RESTART, str(script))
    assert proc.returncode == 1
    assert "operator 'explode' of arrow-source -> explode -> parquet-sink (1/1) failed" \
        in proc.stdout and "no column 'price'" in proc.stdout


def test_invalid_pipeline_and_bad_option_exit_2_with_the_fix(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(textwrap.dedent("""
        import pyarrow as pa, yarnflow.client as yf
        p = yf.Pipeline("bad", parallelism=2)
        p.from_arrow(pa.table({"x": [1]})).forward().map(lambda b: b, name="m").set_parallelism(3)
        p.execute()
    """))
    proc = yarnflow("run", str(script))
    assert proc.returncode == 2
    assert "vertex 'm'" in proc.stdout and "Fix:" in proc.stdout
    proc = yarnflow("run", "-D", "slot.request.timout=1s", str(script))
    assert proc.returncode == 2 and "did you mean 'slot.request.timeout'" in proc.stderr


def test_run_help_documents_every_flag():
    proc = yarnflow("run", "--help")
    for flag in ("--target", "--parallelism", "-D", "--conf", "--progress", "--verbose"):
        assert flag in proc.stdout


def test_a_syntax_error_in_the_pipeline_is_one_line_with_file_and_line(tmp_path):
    script = tmp_path / "typo.py"
    script.write_text("import yarnflow.client as yf\n\np = yf.Pipeline('typo'\nprint(p)\n")
    proc = yarnflow("run", str(script))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{script}, line 3" in proc.stdout and "syntax error" in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def _yarnflow_env(tmp_path: Path, **env: str) -> dict[str, str]:
    """An environment with no Hadoop at all: no configuration, no `yarn` on PATH, and
    a home of its own (so no global Skein driver answers for it)."""
    import os
    base = {k: v for k, v in os.environ.items()
            if k not in ("HADOOP_CONF_DIR", "HADOOP_HOME", "YARNFLOW_HOME")}
    base.update(HOME=str(tmp_path), PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin", **env)
    return base


@pytest.mark.parametrize("command", ["status", "cancel"])
def test_a_yarn_command_without_hadoop_is_one_line_naming_the_fix(tmp_path, command):
    import socket
    run = [sys.executable, "-m", "yarnflow.client.cli", command, "application_1_0001"]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env=_yarnflow_env(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no YARN configuration found" in proc.stdout and "export HADOOP_CONF_DIR" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr

    with socket.socket() as rm:                  # a ResourceManager port that answers
        rm.bind(("127.0.0.1", 0))
        rm.listen(4)
        conf = tmp_path / "hadoop"
        conf.mkdir()
        (conf / "yarn-site.xml").write_text(
            "<configuration><property><name>yarn.resourcemanager.address</name>"
            f"<value>127.0.0.1:{rm.getsockname()[1]}</value></property></configuration>")
        proc = subprocess.run(run, capture_output=True, text=True, timeout=60, cwd=ROOT,
                              env=_yarnflow_env(tmp_path, HADOOP_CONF_DIR=str(conf)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "`yarn` command is not on PATH" in proc.stdout and "Fix:" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 1 and not proc.stderr.strip(), proc.stdout


def test_a_lost_executors_log_named_in_the_failure_is_still_there_after_the_client_exits(tmp_path):
    import os
    import re
    script = tmp_path / "die.py"
    script.write_text(textwrap.dedent(f"""
        import os, pyarrow as pa, yarnflow.client as yf
        def die(batch):
            print("about to die", flush=True)
            os._exit(3)
        p = yf.Pipeline("die")
        p.from_arrow(pa.table({{"x": [1]}})).map(die).write_parquet({str(tmp_path / 'o')!r})
        p.execute()
    """))
    home = tmp_path / "home"
    proc = subprocess.run([sys.executable, "-m", "yarnflow.client.cli", "run", *FAST, *NO_RESTART,
                           str(script)],
                          capture_output=True, text=True, timeout=240, cwd=ROOT,
                          env=dict(os.environ, YARNFLOW_HOME=str(home)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = " ".join(proc.stdout.split())
    named = re.search(r"exited with code 3 \(log: (\S+\.log)\)", text)
    assert named, proc.stdout
    log = Path(named.group(1))
    assert log.parent.parent == home / "local-logs"
    assert "about to die" in log.read_text()          # the user's output, kept
    assert f"TaskExecutor logs: {log.parent}" in text
    # the runtime's own lines went to the run's ApplicationMaster log, not the terminal
    assert "was lost" in (log.parent / "appmaster.log").read_text()
    assert "Traceback" not in proc.stderr and "Handshake" not in proc.stderr, proc.stderr
