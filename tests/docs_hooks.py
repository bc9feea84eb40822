"""MkDocs hooks (docs/mkdocs.yml): pages made from the code, so they cannot drift from it.
They build the site, as the tests do; they are not part of the installed package.

- ``<!-- configuration-reference -->`` in a page becomes the table of every option
  (``yarnflow.conf.reference``, read from conf/options.py at build time).
- The API reference reads ``yarnflow.client`` from the source. The checkout itself is
  the ``yarnflow`` package (setup.py's one rule), which griffe, mkdocstrings' reader,
  cannot find under its own name, so the build shows it a ``yarnflow`` folder of the
  packages the reference covers.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

PLACEHOLDER = "<!-- configuration-reference -->"
ROOT = Path(__file__).resolve().parent.parent
DOCUMENTED = ("client", "core", "conf")      # what the API reference's pages name
_made: list[str] = []


@event_priority(100)      # before mkdocstrings reads its handlers' options
def on_config(config: Any) -> Any:
    tree = tempfile.mkdtemp(prefix="yarnflow-docs-")
    _made.append(tree)
    (Path(tree) / "yarnflow").mkdir()
    for folder in DOCUMENTED:
        (Path(tree) / "yarnflow" / folder).symlink_to(ROOT / folder, target_is_directory=True)
    handler = config.plugins["mkdocstrings"].config["handlers"]["python"]
    handler["paths"] = [tree]
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if PLACEHOLDER not in markdown:
        return markdown
    from yarnflow.conf.reference import markdown as reference
    return markdown.replace(PLACEHOLDER, reference())


def on_shutdown() -> None:
    while _made:
        shutil.rmtree(_made.pop(), ignore_errors=True)
