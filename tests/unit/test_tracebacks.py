"""The user's own lines in a failure: yarnflow's and the libraries' frames left out,
and source lines found on a host that never had the user's file."""
from __future__ import annotations

import json
import linecache
import traceback

import pytest

from yarnflow.core import tracebacks
from yarnflow.core.operators.base import to_batches


def test_only_the_users_frames_are_kept_innermost_last():
    def user_function():
        json.loads("{")          # the standard library raises, called from user code
    try:
        user_function()
    except ValueError as err:
        frames = tracebacks.user_frames(err)
    assert [f.name for f in frames] == ["test_only_the_users_frames_are_kept_innermost_last",
                                        "user_function"]
    assert all("json" not in f.filename for f in frames)


def test_a_failure_raised_in_yarnflow_has_no_user_frame_and_is_told_apart():
    with pytest.raises(Exception) as info:
        list(to_batches({"a": 1}, "map function 'm'"))
    assert tracebacks.raised_by_yarnflow(info.value)
    assert [f.name for f in tracebacks.user_frames(info.value)] == [
        "test_a_failure_raised_in_yarnflow_has_no_user_frame_and_is_told_apart"]


def test_files_are_told_apart_by_where_they_live():
    assert tracebacks.is_user_file("pipeline.py")              # as the client ran it
    assert tracebacks.is_user_file("/home/me/jobs/pipeline.py")
    assert tracebacks.is_user_file("<string>")
    assert not tracebacks.is_user_file("<frozen runpy>")
    assert not tracebacks.is_user_file("pyarrow/table.pxi")
    assert not tracebacks.is_user_file(json.__file__)
    assert not tracebacks.is_user_file(tracebacks.__file__)


def test_shipped_sources_show_their_lines_where_the_file_does_not_exist():
    name = "/nowhere/on/this/host/job.py"
    source = "def fragile(batch):\n    raise ValueError('bad batch')\n"
    code = compile(source, name, "exec")
    scope: dict = {}
    exec(code, scope)
    tracebacks.register_sources(tracebacks.UserSources({name: source}))
    linecache.checkcache()              # a traceback's first step: it must keep the entry
    try:
        scope["fragile"](None)
    except ValueError as err:
        text = tracebacks.format_user_frames(err)
        where = tracebacks.user_line(err)
        full = "".join(traceback.format_exception(err))
    assert f'File "{name}", line 2, in fragile\n    raise ValueError(\'bad batch\')' in text
    assert where == f"{name}, line 2"
    assert "raise ValueError('bad batch')" in full          # Python's own traceback too


def test_sources_of_ship_the_users_files_only(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("def f(b):\n    return b\n")
    scope: dict = {}
    exec(compile(script.read_text(), str(script), "exec"), scope)
    shipped = tracebacks.sources_of([scope["f"], json.loads])
    assert shipped.texts[str(script)] == "def f(b):\n    return b\n"
    assert json.__file__ not in shipped.texts


def test_frames_of_code_that_cloudpickle_renamed_get_their_files_back(tmp_path):
    """cloudpickle 3.1 unpickles every code object as ``<dynamic-code>``: the frames of
    an executor name the client's files by what the client shipped."""
    import types
    script = tmp_path / "client_side_job.py"
    script.write_text("def check(v):\n    if v < 0:\n        raise ValueError('negative')\n"
                      "    return v\n\n\ndef fragile(b):\n    return [check(v) for v in b]\n")
    scope: dict = {}
    exec(compile(script.read_text(), str(script), "exec"), scope)
    shipped = tracebacks.sources_of([scope["fragile"]])      # on the client

    def renamed(code: types.CodeType) -> types.CodeType:     # what the executor unpickles
        consts = tuple(renamed(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
        return code.replace(co_filename=tracebacks.DYNAMIC_CODE, co_consts=consts)
    remote: dict = {}
    for name in ("check", "fragile"):
        remote[name] = types.FunctionType(renamed(scope[name].__code__), remote, name)
    script.unlink()                                           # the executor's host has no file
    linecache.clearcache()
    tracebacks.register_sources(shipped)
    try:
        remote["fragile"]([1, -1])
    except ValueError as err:
        text = tracebacks.format_user_frames(err, shipped)
    assert f'File "{script}", line 8, in fragile' in text, text
    assert f'File "{script}", line 3, in check\n    raise ValueError(\'negative\')' in text, text
    assert tracebacks.DYNAMIC_CODE not in text
