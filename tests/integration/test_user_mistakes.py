"""A user's mistakes, as a new user makes them, through ``yarnflow run`` on the local
target: bad scripts, paths, formats, options, functions and columns. Every one ends
with its exit status and a final message that names the problem (and the fix where
there is one), with no yarnflow traceback, and leaves nothing behind: no executor
process, no temporary file, no partial output."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
FAST = ["-D", "heartbeat.interval=0.5 s", "-D", "resourcemanager.taskmanager-timeout=2 s"]

HEADER = """\
import sys
import pyarrow as pa, pyarrow.compute as pc
import yarnflow.client as yf
D, OUT = sys.argv[1], sys.argv[2]
"""


@dataclass
class Case:
    script: str                      # the pipeline after HEADER ("" when args say it all)
    status: int
    says: list[str]                  # in the output, whitespace folded; {script}: its path
    args: list[str] = field(default_factory=list)
    starts_executors: bool = False   # a mistake only a running job can find


CASES = {
    # --- bad scripts ---------------------------------------------------------------------
    "syntax error": Case("p = yf.Pipeline('x'\n", 2, ["{script}, line 5", "syntax error",
                                                         "fix the script"]),
    "script raises while loading": Case(
        "conf = {}\nthreshold = conf['threshold']\n", 1,
        ["KeyError: 'threshold' ({script}, line 6)"]),
    "script never executes": Case("p = yf.Pipeline('x')\n", 2, ["never called execute()"]),
    "bad call into the api": Case(
        "p = yf.Pipeline('x')\np.from_arrow(pa.table({'a': [1]})).join(None)\n", 1,
        ["ValueError: join needs on=", "({script}, line 6)"]),
    "unsupported join type": Case(
        "p = yf.Pipeline('x')\nt = p.from_arrow(pa.table({'a': [1]}))\n"
        "t.join(t, on='a', how='sideways')\n", 2, ["join type 'sideways' is not one of 'inner', "
                                                    "'left', 'right', 'full', 'left_semi', "
                                                    "'left_anti'", "Fix: use one of Spark's join "
                                                    "types"]),
    # --- bad paths and formats -------------------------------------------------------------
    "missing parquet input": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/nope').write_parquet(OUT)\np.execute()\n", 2,
        ["/nope does not exist", "Fix: check the path"]),
    "missing csv input": Case(
        "p = yf.Pipeline('x')\np.read_csv(D + '/nope.csv').write_parquet(OUT)\np.execute()\n", 2,
        ["/nope.csv does not exist", "Fix:"]),
    "input with no parquet files": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/empty').write_parquet(OUT)\np.execute()\n", 2,
        ["holds no .parquet files"]),
    "text named parquet": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/text').write_parquet(OUT)\np.execute()\n", 2,
        ["is not a Parquet file", "Fix: point read_parquet at Parquet files"]),
    "existing output": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').write_parquet(D + '/existing')"
        "\np.execute()\n", 2, ["/existing already exists", "mode='overwrite'"]),
    "bad write mode": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').write_parquet(OUT, mode='upsert')"
        "\np.execute()\n", 2, ["mode 'upsert' is not one of append, errorifexists, overwrite"]),
    # --- bad columns -------------------------------------------------------------------------
    "join key missing on parquet": Case(
        "p = yf.Pipeline('x', parallelism=2)\n"
        "p.read_parquet(D + '/orders.parquet').join(p.read_csv(D + '/customers.csv'),"
        " left_on='customer_id', right_on='customer').write_parquet(OUT)\np.execute()\n", 2,
        ["vertex 'join': the left input has no column 'customer_id' (it has: id, customer, amount)",
         "did you mean 'customer'?"]),
    "aggregate column missing on csv": Case(
        "p = yf.Pipeline('x')\np.read_csv(D + '/orders.csv').aggregate(['customer'], "
        "[('amout', 'sum')]).write_parquet(OUT)\np.execute()\n", 2,
        ["vertex 'aggregate': its input has no column 'amout'", "did you mean 'amount'?"]),
    "select missing on a table": Case(
        "p = yf.Pipeline('x')\np.from_arrow(pa.table({'a': [1], 'b': [2]})).select('c')"
        ".write_parquet(OUT)\np.execute()\n", 2, ["vertex 'select': its input has no column 'c' "
                                                   "(it has: a, b)"]),
    "key_by missing": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').key_by('cust')"
        ".map(lambda b: b, name='m').write_parquet(OUT)\np.execute()\n", 2,
        ["vertex 'm'", "key_by", "no column 'cust'", "did you mean 'customer'?"]),
    "read_parquet columns missing": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet', columns=['id', 'amt'])"
        ".write_parquet(OUT)\np.execute()\n", 2, ["no column 'amt'"]),
    "aggregation pyarrow lacks": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').aggregate(['customer'], "
        "[('amount', 'average')]).write_parquet(OUT)\np.execute()\n", 2,
        ["hash_average", "Fix: use an aggregation"]),
    "join keys of different types": Case(
        "p = yf.Pipeline('x')\nnames = p.from_arrow(pa.table({'customer': ['7'], 'name': ['a']}))\n"
        "p.read_parquet(D + '/orders.parquet').join(names, on='customer').write_parquet(OUT)\n"
        "p.execute()\n", 2, ["the join's key 'customer' is int64 on the left and 'customer' "
                             "string on the right", "Fix: cast"]),
    "declared schema then a missing column": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').map(lambda b: b, "
        "output_schema=pa.schema([('id', pa.int64())]), name='ids').select('amount')"
        ".write_parquet(OUT)\np.execute()\n", 2, ["vertex 'select': its input has no column "
                                                   "'amount' (it has: id)"]),
    "declared schema that is none": Case(
        "p = yf.Pipeline('x')\np.from_arrow(pa.table({'a': [1]})).map(lambda b: b, name='m', "
        "output_schema=7)\n", 2, ["the output_schema of map function 'm' is not a schema",
                                  "Fix: give a pyarrow.schema"]),
    # --- bad options ----------------------------------------------------------------------------
    "unknown option": Case("", 2, ["unknown configuration option 'slot.request.timout'",
                                   "did you mean 'slot.request.timeout'"],
                           args=["-D", "slot.request.timout=5 s"]),
    "bad option value": Case("", 2, ["bad value for heartbeat.interval", "is not a duration"],
                             args=["-D", "heartbeat.interval=soon"]),
    "parallelism flag 0": Case("", 2, ["parallelism must be a whole number of at least 1, got '0'"],
                               args=["-p", "0"]),
    "parallelism option 0": Case("", 2, ["bad value for parallelism.default: parallelism must be "
                                         "a whole number of at least 1, got '0'"],
                                 args=["-D", "parallelism.default=0"]),
    "pipeline parallelism 0": Case(
        "p = yf.Pipeline('x', parallelism=0)\n", 1,
        ["parallelism must be a whole number of at least 1, got 0 ({script}, line 5)"]),
    "set_parallelism 0": Case(
        "p = yf.Pipeline('x')\np.from_arrow(pa.table({'a': [1]})).set_parallelism(0)\n", 1,
        ["parallelism must be a whole number of at least 1, got 0 ({script}, line 6)"]),
    "unknown target": Case("", 2, ["'nowhere' is not a target; use local, yarn-per-job or "
                                   "yarn-session"], args=["-t", "nowhere"]),
    "unknown target option": Case("", 2, ["bad value for execution.target: 'nowhere' is not a "
                                          "target"], args=["-D", "execution.target=nowhere"]),
    "forward across parallelism": Case(
        "p = yf.Pipeline('x', parallelism=2)\np.from_arrow(pa.table({'a': [1]})).forward()"
        ".map(lambda b: b, name='m').set_parallelism(3).write_parquet(OUT)\np.execute()\n", 2,
        ["vertex 'm'", "FORWARD edge", "Fix:"]),
    "profile bigger than any container": Case(
        "p = yf.Pipeline('x')\np.from_arrow(pa.table({'a': [1]})).map(lambda b: b, name='huge')"
        ".resources(yf.ResourceSpec(64, '512g')).write_parquet(OUT)\np.execute()\n", 2,
        ["vertex 'huge'", "more than the largest container", "Fix: lower"],
        args=["-D", "resourcemanager.max-worker.cpu=8"]),
    # --- bad functions (found only when the job runs) ------------------------------------------
    "map returns a dict": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').map(lambda b: {'id': 1}, "
        "name='todict').write_parquet(OUT)\np.execute()\n", 1,
        ["map function 'todict' must return a pyarrow RecordBatch or Table, got dict",
         "not restarted: a non-recoverable error"], starts_executors=True),
    "filter returns a number": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').filter(lambda b: 3, "
        "name='keep').write_parquet(OUT)\np.execute()\n", 1,
        ["filter function 'keep' must return a boolean Arrow array", "not restarted"],
        starts_executors=True),
    "map returns other columns than declared": Case(
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').map(lambda b: b, name='ids', "
        "output_schema=pa.schema([('id', pa.int64())])).write_parquet(OUT)\np.execute()\n", 1,
        ["map function 'ids' returned columns (id: int64, customer: int64, amount: double) "
         "other than its output_schema (id: int64)", "not restarted"], starts_executors=True),
    "user raises NonRecoverableError": Case(
        "def check(b):\n    raise yf.NonRecoverableError('the feed is corrupt')\n"
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').map(check)"
        ".write_parquet(OUT)\np.execute()\n", 1,
        ["NonRecoverableError: the feed is corrupt", "not restarted", 'File "{script}", line 6, in check'],
        starts_executors=True),
    "pipeline an executor cannot load": Case(
        "import pathlib\npathlib.Path(__file__).with_name('helper_mod.py').write_text("
        "'def ident(b):\\n    return b\\n')\nimport helper_mod\n"
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').map(helper_mod.ident)"
        ".write_parquet(OUT)\np.execute()\n", 1,
        ["cannot be loaded here", "No module named 'helper_mod'", "Fix: install what it imports",
         "not restarted"], starts_executors=True),
    "user exception in a map": Case(
        "def fragile(b):\n    if b.num_rows:\n        raise ValueError('bad batch')\n    return b\n"
        "p = yf.Pipeline('x')\np.read_parquet(D + '/orders.parquet').map(fragile)"
        ".write_parquet(OUT)\np.execute()\n", 1,
        ["ValueError: bad batch", 'File "{script}", line 7, in fragile',
         "raise ValueError('bad batch')"],
        args=["-D", "restart-strategy.type=none"], starts_executors=True),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("mistakes")
    orders = pa.table({"id": [1, 2, 3], "customer": [7, 8, 7], "amount": [1.0, 2.0, 3.0]})
    pq.write_table(orders, data / "orders.parquet")
    (data / "orders.csv").write_text("id,customer,amount\n1,7,1.0\n2,8,2.0\n3,7,3.0\n")
    (data / "customers.csv").write_text("customer,name\n7,a\n8,b\n")
    (data / "empty").mkdir()
    (data / "text").mkdir()
    (data / "text" / "orders.parquet").write_text("id,amount\n1,2.0\n")
    (data / "existing").mkdir()
    (data / "existing" / "part-00000.parquet").write_bytes(b"an older output")
    return data


def executors_under(directory: Path) -> list[psutil.Process]:
    """Processes started with a path under ``directory`` (an executor's --workdir)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(str(directory) in arg for arg in proc.info["cmdline"] or ()):
            found.append(proc)
    return found


@pytest.mark.parametrize("name", list(CASES))
def test_a_mistake_ends_with_one_clear_message_and_leaves_nothing(name, data, tmp_path):
    case = CASES[name]
    script = tmp_path / "pipeline.py"
    script.write_text(HEADER + case.script if case.script else HEADER + "p = yf.Pipeline('x')\n"
                      "p.from_arrow(pa.table({'a': [1]})).write_parquet(OUT)\np.execute()\n")
    out, tmp, home = tmp_path / "out", tmp_path / "tmp", tmp_path / "home"
    tmp.mkdir()
    existing_before = sorted(p.name for p in (data / "existing").iterdir())
    env = dict(os.environ, TMPDIR=str(tmp), YARNFLOW_HOME=str(home))
    proc = subprocess.run([sys.executable, "-m", "yarnflow.client.cli", "run", *FAST, *case.args,
                           str(script), "--", str(data), str(out)],
                          capture_output=True, text=True, timeout=240, cwd=ROOT, env=env)
    output = proc.stdout + proc.stderr
    folded = " ".join(output.split())
    assert proc.returncode == case.status, output
    for words in case.says:
        assert " ".join(words.replace("{script}", str(script)).split()) in folded, output
    assert "Traceback" not in output, output
    if any("not restarted" in words for words in case.says):    # one attempt, no restart
        assert not re.search(r"FAILED in [0-9.]+ s, [0-9]+ restart", output), output
    assert not out.exists(), f"{name} left a partial output: {list(out.rglob('*'))}"
    assert sorted(p.name for p in (data / "existing").iterdir()) == existing_before
    assert not list(tmp.iterdir()), f"{name} left temporary files: {list(tmp.rglob('*'))}"
    assert not executors_under(tmp), f"{name} left executors running"
    runs = list((home / "local-logs").glob("*")) if (home / "local-logs").exists() else []
    assert bool(runs) == case.starts_executors, \
        f"{name}: executors {'never ' if case.starts_executors else ''}started: {runs}"


def test_the_corpus_covers_every_kind_of_mistake():
    assert len(CASES) >= 25
    assert sum(c.starts_executors for c in CASES.values()) >= 5


def _fs_put(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "HADOOP_HOME")}
    return subprocess.run([sys.executable, "-m", "yarnflow.client.cli", "fs", "put", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env=dict(env, YARNFLOW_HOME=str(tmp_path / "home")))


def test_fs_put_makes_missing_parents_and_a_put_that_fails_half_way_leaves_nothing(tmp_path):
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.csv").write_text("x\n1\n")
    (tree / "sub" / "b.csv").write_text("x\n2\n")
    target = tmp_path / "cluster" / "new" / "deep" / "data"
    proc = _fs_put(tmp_path, str(tree), str(target))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (target / "sub" / "b.csv").read_text() == "x\n2\n"
    # a file that cannot be read, after two that were written: the put fails half-way
    (tree / "z-broken.csv").symlink_to(tmp_path / "gone")
    again = tmp_path / "cluster" / "other" / "data"
    proc = _fs_put(tmp_path, str(tree), str(again))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "cannot read" in output and "z-broken.csv" in output and "nothing was left" in output
    assert "Traceback" not in output and "Exception ignored" not in output, output
    assert len(output.strip().splitlines()) == 1, output
    assert not (tmp_path / "cluster" / "other").exists()         # nor the parents it made
    assert sorted(p.name for p in (tmp_path / "cluster").iterdir()) == ["new"]
