"""The wheel holds every module of the source tree and the data files the runtime
reads, under the names it is imported by (tests/packaging.py reads setup.py)."""
from __future__ import annotations

import zipfile

from tests.packaging import ROOT, folder_of, packages, product, source_modules


def test_every_folder_with_python_under_a_top_level_folder_is_a_package():
    """Discovery finds folders with an __init__.py: one without it would be left out."""
    packaged = {folder_of(package) for package in packages()}
    for folder in product():
        for path in (ROOT / folder).rglob("*.py"):
            assert path.parent in packaged, \
                f"{path.parent.relative_to(ROOT)}/ has Python files but no __init__.py"


def test_the_wheel_holds_every_module_and_data_file(built_wheel):
    names = set(zipfile.ZipFile(built_wheel).namelist())
    missing = [m for m in source_modules()
               if f"{m.replace('.', '/')}.py" not in names
               and f"{m.replace('.', '/')}/__init__.py" not in names]
    assert not missing, f"the wheel lacks {missing}"
    assert "yarnflow/taskexecutor/spark/__init__.py" in names   # the one a hand-kept map lost
    assert "yarnflow/__init__.py" not in names   # a namespace: importing a runtime package runs no client code
    for data in ("yarnflow/client/py.typed", "yarnflow/core/py.typed", "yarnflow/conf/yarnflow.yaml",
                 "yarnflow/rpc/proto/jobgraph.proto", "yarnflow/appmaster/webmonitor/static/index.html"):
        assert data in names, f"the wheel lacks {data}"
