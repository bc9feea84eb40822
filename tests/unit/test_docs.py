"""The documentation: the site builds with no warning (MkDocs --strict: broken links and
anchors, docstrings mkdocstrings cannot read), its configuration reference lists every
option, and the README stays a guide. The code blocks run in
tests/integration/test_docs_examples.py."""
from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks import DOCKER, LOCAL, NOT_BENCHMARKS, YARN
from yarnflow.conf.options import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "pages"
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(ROOT / "docs" / "mkdocs.yml"), "-d", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    assert not warnings, "\n".join(warnings)
    return out


def test_the_site_builds_with_every_page_and_the_api_reference(site):
    for page in PAGES.glob("*.md"):
        name = "index.html" if page.stem == "index" else f"{page.stem}/index.html"
        assert (site / name).exists(), name
    api = (site / "api" / "index.html").read_text()
    for documented in ("DataSet.join", "DataSet.aggregate", "Pipeline.read_csv",
                       "ResourceSpec", "JobHandle.wait"):
        assert documented.split(".")[-1] in api, documented


def test_the_configuration_reference_lists_every_option_a_user_may_set(site):
    page = (site / "configuration" / "index.html").read_text()
    for option in REGISTRY.values():
        assert (f"<code>{option.key}</code>" in page) is not option.test_only, option.key


def _docs() -> list[Path]:
    return [README, *sorted(PAGES.glob("*.md"))]


def test_the_readme_is_a_guide_of_at_most_250_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    # the two quick-start commands, where .ci/run and the release check find them
    assert lines[15].startswith("python -m pip install -e '.[spark]'")
    assert lines[21] == (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]


def test_no_test_only_option_is_in_the_users_docs():
    test_only = [option.key for option in REGISTRY.values() if option.test_only]
    for page in _docs():
        text = page.read_text()
        assert not [key for key in test_only if key in text], page.name


def test_benchmark_figures_and_commands_are_on_the_benchmarks_page_only():
    page = (PAGES / "benchmarks.md").read_text()
    for doc in _docs():
        if doc.name != "benchmarks.md":
            assert not re.search(r"python bench/", doc.read_text()), doc.name
    listed = set(LOCAL) | set(YARN) | set(DOCKER)
    on_disk = {p.name for p in (ROOT / "bench").glob("*.py")} - NOT_BENCHMARKS
    assert on_disk == listed
    for name in sorted(listed):
        assert f"python bench/{name}" in page, f"{name} has no command on the benchmarks page"


def test_every_public_class_and_method_of_the_pipeline_api_says_what_it_does():
    import yarnflow.client as yf
    missing = []
    for name in yf.__all__:
        exported = getattr(yf, name)
        if not inspect.getdoc(exported):
            missing.append(name)
        if not inspect.isclass(exported):
            continue
        for member, _ in inspect.getmembers(exported):
            found = inspect.getattr_static(exported, member)
            function = getattr(getattr(found, "__func__", found), "fget", None) or \
                getattr(found, "__func__", found)
            if member.startswith("_") or not inspect.isfunction(function):
                continue
            if not (function.__doc__ or "").strip():
                missing.append(f"{name}.{member}")
    assert not missing, missing
