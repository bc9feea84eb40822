"""The user's own lines in a failure: the frames of a traceback that are the user's
code, with yarnflow's and the libraries' left out, as PySpark shows a worker's Python
traceback.

An executor runs user functions that were pickled on the client, on a host that never
had the user's files, and cloudpickle (3.1 on) names every code object it pickles
``<dynamic-code>``. So the client ships, with the operator (``Operator.sources``), the
files' text and which file each of the user's code objects came from, keyed by its
qualified name and first line; the executor registers the text with ``linecache`` and
puts the file names back into the frames it reports."""
from __future__ import annotations

import inspect
import linecache
import os
import site
import sys
import sysconfig
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType
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
# What cloudpickle names the file of every code object it unpickles.
DYNAMIC_CODE = "<dynamic-code>"
# Code objects of the user's a function reaches that are followed, at most.
MAX_CODES = 2000


@dataclass(frozen=True)
class UserSources:
    """What an executor needs to show the user's lines: each file's text, and the file
    of each code object by (qualified name, first line)."""
    texts: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[tuple[str, int], str] = field(default_factory=dict)


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


def user_frames(err: BaseException, sources: UserSources | None = None
                ) -> list[traceback.FrameSummary]:
    """The user's frames of ``err``'s traceback, innermost last (at most MAX_FRAMES),
    with the file names ``sources`` knows put back."""
    frames = []
    for frame, lineno in traceback.walk_tb(err.__traceback__):
        code = frame.f_code
        filename = code.co_filename
        if sources is not None and filename == DYNAMIC_CODE:
            filename = sources.files.get((_qualname(code), code.co_firstlineno), filename)
        if is_user_file(filename):
            frames.append(traceback.FrameSummary(filename, lineno, code.co_name))
    return frames[-MAX_FRAMES:]


def format_user_frames(err: BaseException, sources: UserSources | None = None) -> str:
    """The user's frames as Python prints them (``File "x.py", line 3, in f`` and the
    source line), or "" when none of the traceback is the user's."""
    frames = user_frames(err, sources)
    return "".join(traceback.format_list(frames)).rstrip("\n") if frames else ""


def user_line(err: BaseException) -> str:
    """``file, line N`` of the innermost user frame, or ""."""
    frames = user_frames(err)
    return f"{frames[-1].filename}, line {frames[-1].lineno}" if frames else ""


def sources_of(functions: Iterable[Any]) -> UserSources:
    """The user's files that ``functions`` (and what they call of the user's) were
    written in, and the running ``__main__`` script, to ship with them."""
    files = {(_qualname(code), code.co_firstlineno): code.co_filename
             for code in _user_codes(functions)}
    names = set(files.values())
    names.add(getattr(sys.modules.get("__main__"), "__file__", "") or "")
    texts = {}
    for name in sorted(n for n in names if n and is_user_file(n) and not n.startswith("<")):
        try:
            if os.path.getsize(name) <= MAX_SOURCE_BYTES:
                texts[name] = Path(name).read_text(errors="replace")
        except OSError:
            continue                 # not a file here (an interactive session's): no source
    return UserSources(texts, files)


def _user_codes(functions: Iterable[Any]) -> list[CodeType]:
    """The code objects of the user's functions, of the functions and lambdas defined
    in them, and of the user's functions they reach by name or closure: each may be
    a frame of a failure."""
    pending = [fn for fn in functions if inspect.isfunction(fn)]
    seen_functions: set[int] = set()
    codes: list[CodeType] = []
    while pending and len(codes) < MAX_CODES:
        fn = pending.pop()
        if id(fn) in seen_functions or not is_user_file(fn.__code__.co_filename):
            continue
        seen_functions.add(id(fn))
        nested = [fn.__code__]
        while nested:
            code = nested.pop()
            codes.append(code)
            nested.extend(c for c in code.co_consts if isinstance(c, CodeType))
            pending.extend(g for name in code.co_names
                           if inspect.isfunction(g := fn.__globals__.get(name)))
        pending.extend(c for cell in fn.__closure__ or ()
                       if inspect.isfunction(c := _contents(cell)))
    return codes


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:           # a cell not filled yet
        return None


def _qualname(code: CodeType) -> str:
    return getattr(code, "co_qualname", code.co_name)     # Python 3.11 on


def register_sources(sources: UserSources) -> None:
    """Make ``linecache`` (and so every traceback) find these files' lines here. An
    entry without a modification time is one ``linecache.checkcache`` keeps."""
    for name, text in sources.texts.items():
        if name not in linecache.cache:
            linecache.cache[name] = (len(text), None, text.splitlines(True), name)


def noted(cause: str, note: str) -> str:
    """``note`` at the end of a failure's first line: the user's frames that follow it
    stay last, where Python puts a traceback."""
    first, newline, frames = cause.partition("\n")
    return f"{first} {note}{newline}{frames}"
