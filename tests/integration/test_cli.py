"""The ``yarnflow`` CLI as a user runs it: the main example, exit statuses, errors."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
FAST = ["-D", "heartbeat.interval=0.5 s", "-D", "resourcemanager.taskmanager-timeout=2 s"]


def yarnflow(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "yarnflow.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def main_run(tmp_path_factory):
    """The README's main command on fresh data: generates it with PySpark, then runs."""
    tmp = tmp_path_factory.mktemp("main-example")
    data, out = tmp / "data", tmp / "out"
    proc = yarnflow("run", *FAST, "examples/skewed_join.py", "--", "--rows", "30000",
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
    assert got.num_rows == 30000
    assert got.select(want.column_names).equals(want)


def test_explain_prints_the_plan_with_estimates_and_the_join_decision(main_run):
    _, data, _ = main_run
    args = ["examples/skewed_join.py", "--", "--rows", "30000", "--data", str(data)]
    proc = yarnflow("explain", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = " ".join(proc.stdout.split())
    assert "FORWARD <- instruments" in text and "BROADCAST <- currency-code" in text
    assert "30,000" in text and "492" in text            # estimated rows, from the footers
    assert "join: BROADCAST join — currency-code is estimated at" in text
    assert "FINISHED" not in text                        # nothing ran
    hashed = yarnflow("explain", "-D", "planner.broadcast-threshold=100b", *args)
    assert hashed.returncode == 0, hashed.stdout + hashed.stderr
    text = " ".join(hashed.stdout.split())
    assert "HASH(CurrencyId) <- instruments" in text and "join: HASH join — no side within" in text


def test_failing_job_exits_1_and_names_the_error(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text(textwrap.dedent(f"""
        import pyarrow as pa, yarnflow as yf
        def explode(batch):
            raise KeyError("no column 'price'")
        p = yf.Pipeline("boom")
        p.from_arrow(pa.table({{"x": [1]}})).map(explode).write_parquet({str(tmp_path / 'o')!r})
        p.execute()
    """))
    proc = yarnflow("run", *FAST, str(script))
    assert proc.returncode == 1
    assert "explode (1/1) failed" in proc.stdout and "no column 'price'" in proc.stdout


def test_invalid_pipeline_and_bad_option_exit_2_with_the_fix(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(textwrap.dedent("""
        import pyarrow as pa, yarnflow as yf
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
    script.write_text("import yarnflow as yf\n\np = yf.Pipeline('typo'\nprint(p)\n")
    proc = yarnflow("run", str(script))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{script}, line 3" in proc.stdout and "syntax error" in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
