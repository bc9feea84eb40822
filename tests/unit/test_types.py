"""The type checker, strict, over the whole product as it gets installed: the wheel
that ``pip install`` users get, unpacked, so a module the wheel leaves out, or one that
only type checks through the checkout's layout, fails here (tests/mypy.ini)."""
from __future__ import annotations

import zipfile

from mypy import api

from tests.packaging import ROOT


def test_the_installed_product_type_checks(built_wheel, tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    zipfile.ZipFile(built_wheel).extractall(site)
    monkeypatch.setenv("MYPYPATH", str(site))     # yarnflow is a namespace package there
    out, err, status = api.run(["--config-file", str(ROOT / "tests" / "mypy.ini"),
                                "--cache-dir", str(tmp_path / ".mypy_cache"),
                                "--no-error-summary", "-p", "yarnflow"])
    assert status == 0, (out + err).replace(str(site) + "/", "")
    # the check saw the tree: a strict check of nothing would pass too
    verbose = api.run(["--config-file", str(ROOT / "tests" / "mypy.ini"), "--cache-dir",
                       str(tmp_path / ".mypy_cache"), "--no-error-summary", "-v",
                       "-p", "yarnflow.appmaster.jobmaster"])[1]
    assert "yarnflow.appmaster.jobmaster.scheduler.default_scheduler" in verbose
