"""What `pip install yarnflow` users get: the wheel installed into a fresh virtual
environment (not editable, not the checkout on sys.path) imports every module of the
source tree, and its console script runs. Dependencies resolve as they would for a
user; pandas stays below 3, which PySpark 4 supports."""
from __future__ import annotations

import json
import subprocess
import venv

from tests.packaging import source_modules

IMPORT_ALL = """
import importlib, json, sys
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as err:
        failed[name] = f"{type(err).__name__}: {err}"
import pandas, yarnflow.client
print(json.dumps({"failed": failed, "yarnflow": yarnflow.client.__file__, "pandas": pandas.__version__}))
"""


def test_the_wheel_installs_into_a_fresh_environment_and_imports_every_module(built_wheel, tmp_path):
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              str(built_wheel)], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout + install.stderr
    modules = [m for m in source_modules() if not m.endswith(".__main__")]   # run below
    run = subprocess.run([str(python), "-c", IMPORT_ALL, *modules], capture_output=True,
                         text=True, timeout=300, cwd=tmp_path)   # not the checkout: no source on the path
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["failed"] == {}, report["failed"]
    assert report["yarnflow"].startswith(str(env)), report["yarnflow"]
    assert int(report["pandas"].split(".")[0]) < 3, report["pandas"]
    cli = subprocess.run([str(env / "bin" / "yarnflow"), "--help"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert cli.returncode == 0 and "run" in cli.stdout, cli.stdout + cli.stderr
    for entry in [m.removesuffix(".__main__") for m in source_modules() if m.endswith(".__main__")]:
        # what a container runs: the ApplicationMaster and the TaskExecutor
        main = subprocess.run([str(python), "-m", entry, "--help"], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert main.returncode == 0 and "usage" in main.stdout, (entry, main.stdout + main.stderr)
