"""ruff over the whole product, with tests/ruff.toml: CI lints what the README's test
command runs, as the type check does."""
from __future__ import annotations

import subprocess
import sys

from tests.packaging import ROOT, product

PRODUCT = [*product(), "bench", "examples", "setup.py"]


def test_the_product_passes_ruff():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--config",
                           str(ROOT / "tests" / "ruff.toml"), "--output-format", "concise",
                           *PRODUCT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
