"""TPC-H tables at a scale factor, made with tpchgen-cli (PyPI) as directories of
Parquet files (``<dir>/<table>/<table>.<part>.parquet``), once per scale factor in
the user's cache: ``~/.cache/yarnflow/tpch/sf<scale>``."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")


def cache_dir(scale: float) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "yarnflow" / "tpch" / f"sf{scale:g}"


def generate(scale: float, parts: int = 4) -> Path:
    """The tables at ``scale``, generated the first time (under a lock: concurrent
    tests generate once)."""
    target = cache_dir(scale)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".sf{scale:g}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all((target / t).is_dir() for t in TABLES):
            return target
        cli = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run([cli, "parquet", "-s", f"{scale:g}", f"--parts={parts}",
                        f"--output-dir={partial}"], check=True, capture_output=True)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    return target
