"""Every code block of the README and of docs/pages runs here, on `local`, so the docs
cannot drift from the API: a Python block as a script (`python block.py`), a shell block
with bash (`-e`: every command must succeed), a YAML block as a yarnflow configuration
file. A comment on the line before a block may say

- ``<!-- docs-test: skip REASON -->``: not run, for that reason (it needs a YARN
  cluster, installs packages, or runs for minutes);
- ``<!-- docs-test: save NAME -->``: saved as NAME (and run, if Python), for the blocks
  after it that use it (``yarnflow run first.py``).

The blocks run in the order a reader meets them (the README, then the site's pages in
its navigation's order) in one working directory, so a later block may use what an
earlier one saved or wrote."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from yarnflow.conf import Configuration

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*docs-test:\s*(skip|save)\s*(.*?)\s*-->")
RUNNABLE = {"python", "bash", "yaml"}


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    code: str
    marker: tuple[str, str] | None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def documents() -> list[Path]:
    """The README, then the pages in the site's navigation order."""
    nav = yaml.safe_load((ROOT / "docs" / "mkdocs.yml").read_text())["nav"]
    return [ROOT / "README.md", *(ROOT / "docs" / "pages" / next(iter(entry.values()))
                                  for entry in nav)]


def blocks() -> list[Block]:
    found = []
    for path in documents():
        text = path.read_text()
        for match in FENCE.finditer(text):
            before = [line for line in text[:match.start()].splitlines() if line.strip()]
            marker = MARKER.search(before[-1]) if before else None
            found.append(Block(str(path.relative_to(ROOT)), text.count("\n", 0, match.start()) + 1,
                               match.group(1), match.group(2),
                               (marker.group(1), marker.group(2)) if marker else None))
    return found


ALL = blocks()


def test_every_block_runs_or_says_why_not():
    for block in ALL:
        if block.marker and block.marker[0] == "skip":
            assert len(block.marker[1]) > 10, f"{block}: a skipped block needs its reason"
        else:
            assert block.language in RUNNABLE, \
                f"{block}: a ```{block.language or 'text'} block cannot run; mark it skip with a reason"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("docs")
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    return work


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("YARNFLOW_", "HADOOP_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["YARNFLOW_HOME"] = str(work / ".yarnflow")     # its local logs, not the user's
    return env


def _run(block: Block, work: Path, index: int) -> None:
    saved = block.marker[1] if block.marker and block.marker[0] == "save" else None
    if block.language == "yaml":
        file = work / (saved or f"block-{index}.yaml")
        file.write_text(block.code)
        Configuration.from_yaml_file(file)     # every key known, every value valid
        return
    if block.language == "python":
        file = work / (saved or f"block-{index}.py")
        file.write_text(block.code)
        command = [sys.executable, str(file)]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    proc = subprocess.run(command, cwd=work, env=_env(work), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"{block} failed:\n{block.code}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def test_every_runnable_block_runs_in_the_order_a_reader_meets_it(workdir):
    ran = 0
    for index, block in enumerate(ALL):
        if (block.marker and block.marker[0] == "skip") or block.language not in RUNNABLE:
            continue
        _run(block, workdir, index)
        ran += 1
    assert ran >= 10, ran
