"""The type checker over the whole product (strict for the model package and the
gateways, see tests/mypy.ini). The folders are installed under one ``yarnflow``
namespace (setup.py), which mypy cannot follow through an editable install, so the
test lays the packages out as installed, with symlinks, and checks that."""
from __future__ import annotations

import ast
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]


def _packages() -> dict[str, str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PACKAGES":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no PACKAGES mapping")


def test_the_product_type_checks(tmp_path):
    for package, folder in _packages().items():
        target = tmp_path.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in (ROOT / folder).iterdir():
            if source.suffix in (".py", ".pyi"):
                (target / source.name).symlink_to(source)
    out, err, status = api.run(["--config-file", str(ROOT / "tests" / "mypy.ini"),
                                "--cache-dir", str(tmp_path / ".mypy_cache"),
                                "--no-error-summary", str(tmp_path / "yarnflow")])
    assert status == 0, (out + err).replace(str(tmp_path) + "/", "")
