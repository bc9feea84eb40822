"""The user's own lines in a failure: the frames of a traceback that are the user's
code, with yarnflow's and the libraries' left out, as PySpark shows a worker's Python
traceback. An executor runs user functions that were pickled on the client, so their
frames name the client's files; the client ships those files' text with the operator
(``Operator.sources``) and the executor registers it with ``linecache``, so a frame
shows its source line on a host that never had the file."""
from __future__ import annotations

import linecache
import os
import site
import sys
import sysconfig
import traceback
from pathlib import Path
from typing import Any, Iterable, Mapping

# yarnflow's own folders (setup.py's PRODUCT): a user's script may sit beside them in a
# checkout, so the folders are told apart, not the root
_ROOT = Path(__file__).resolve().parents[1]
_YARNFLOW = tuple(str(_ROOT / folder) + os.sep for folder in
                  ("appmaster", "taskexecutor", "client", "conf", "core", "rpc"))
# Shipped sources larger than this stay behind: a frame then shows no source line.
MAX_SOURCE_BYTES = 512 << 10
# Frames shown of a failure, innermost last.
MAX_FRAMES = 6


def _library_dirs() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib",
                                                         "platlib")}
    paths.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    paths.add(site.getusersitepackages())
    paths.update({os.path.join(sys.base_prefix, "lib"), os.path.join(sys.prefix, "lib")})
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


_LIBRARIES = _library_dirs()


def is_user_file(filename: str) -> bool:
    """A file of the user's code: not yarnflow's, not the standard library's or an
    installed package's, not Cython's (``pyarrow/table.pxi``) or a frozen module's. A
    relative ``.py`` name is the user's script as the client ran it."""
    if filename.startswith("<"):
        return not filename.startswith("<frozen")
    if not filename.endswith(".py"):
        return False
    if not os.path.isabs(filename):
        return True
    real = os.path.realpath(filename)
    return not real.startswith(_YARNFLOW) and not real.startswith(_LIBRARIES) \
        and not filename.startswith(_YARNFLOW)


def raised_by_yarnflow(err: BaseException) -> bool:
    """Whether yarnflow's own code raised ``err`` (its message was written for the user)."""
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and os.path.realpath(frames[-1].filename).startswith(_YARNFLOW)


def user_frames(err: BaseException) -> list[traceback.FrameSummary]:
    """The user's frames of ``err``'s traceback, innermost last (at most MAX_FRAMES)."""
    frames = traceback.extract_tb(err.__traceback__)
    return [f for f in frames if is_user_file(f.filename)][-MAX_FRAMES:]


def format_user_frames(err: BaseException) -> str:
    """The user's frames as Python prints them (``File "x.py", line 3, in f`` and the
    source line), or "" when none of the traceback is the user's."""
    frames = user_frames(err)
    return "".join(traceback.format_list(frames)).rstrip("\n") if frames else ""


def user_line(err: BaseException) -> str:
    """``file, line N`` of the innermost user frame, or ""."""
    frames = user_frames(err)
    return f"{frames[-1].filename}, line {frames[-1].lineno}" if frames else ""


def sources_of(functions: Iterable[Any]) -> dict[str, str]:
    """The text of the files the user's ``functions`` were written in (and of the
    running ``__main__`` script), to ship with them."""
    names = {getattr(getattr(fn, "__code__", None), "co_filename", "") for fn in functions}
    names.add(getattr(sys.modules.get("__main__"), "__file__", "") or "")
    sources = {}
    for name in sorted(n for n in names if n and is_user_file(n) and not n.startswith("<")):
        try:
            if os.path.getsize(name) <= MAX_SOURCE_BYTES:
                sources[name] = Path(name).read_text(errors="replace")
        except OSError:
            continue                 # not a file here (an interactive session's): no source
    return sources


def register_sources(sources: Mapping[str, str]) -> None:
    """Make ``linecache`` (and so every traceback) find these files' lines here. An
    entry without a modification time is one ``linecache.checkcache`` keeps."""
    for name, text in sources.items():
        if name not in linecache.cache:
            linecache.cache[name] = (len(text), None, text.splitlines(True), name)
