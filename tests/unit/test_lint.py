"""ruff over the whole product and its tests, with tests/ruff.toml: CI lints what the
README's test command runs, as the type check does."""
from __future__ import annotations

import subprocess
import sys

from tests.packaging import ROOT, product

PRODUCT = [*product(), "bench", "examples", "setup.py", "tests"]


def test_the_product_and_its_tests_pass_ruff():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--config",
                           str(ROOT / "tests" / "ruff.toml"), "--output-format", "concise",
                           *PRODUCT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


# Small modules with one job each: one past this is split before it grows further.
MODULE_LINES = 500


def test_no_module_of_the_product_is_over_500_lines():
    generated = ("_pb2.py", "_pb2_grpc.py", "_pb2.pyi")
    long = {str(path.relative_to(ROOT)): n for folder in product()
            for path in (ROOT / folder).rglob("*.py") if not path.name.endswith(generated)
            if (n := len(path.read_text().splitlines())) > MODULE_LINES}
    assert not long, f"modules over {MODULE_LINES} lines: {long}"
