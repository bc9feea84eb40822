"""Imports point one way: client -> model <- runtime. Checked from the source, so a
new import that crosses a boundary fails here rather than in a newcomer's head."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging import ROOT, product

RUNTIME = ("yarnflow.appmaster", "yarnflow.taskexecutor")
# The one seam through which the client starts the runtime in its own process.
LOCAL_SEAM = {"client/targets/local.py"}


def folder_of(module: str) -> str:
    """The top-level folder a ``yarnflow...`` module lives in: its second name, by
    setup.py's one rule (``yarnflow.<folder>...`` is ``<folder>/...``)."""
    return module.split(".")[1] if "." in module else ""


def imports(folder: str) -> list[tuple[str, str]]:
    """(file, imported yarnflow module) for every import in ``folder``, including the
    ones inside functions and TYPE_CHECKING blocks."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if "generated" in path.parts or "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name == "yarnflow" or name.startswith("yarnflow."):
                    found.append((str(path.relative_to(ROOT)), name))
    return found


def test_the_boundary_check_sees_imports():
    """The checks below would pass vacuously if the walk found nothing."""
    assert ("client/pipeline.py", "yarnflow.core.jobgraph") in imports("client")
    assert folder_of("yarnflow.client.pipeline") == "client"
    assert folder_of("yarnflow.core.jobgraph") == "core"


@pytest.mark.parametrize("folder", ["appmaster", "taskexecutor", "rpc", "conf"])
def test_the_runtime_never_imports_the_client(folder):
    crossing = [(f, m) for f, m in imports(folder) if folder_of(m) == "client"]
    assert not crossing, f"{folder}/ imports the client: {crossing}"


def test_the_model_imports_nothing_but_itself():
    crossing = [(f, m) for f, m in imports("core") if folder_of(m) != "core"]
    assert not crossing, f"core/ imports other yarnflow packages: {crossing}"


def test_the_client_reaches_the_runtime_only_through_the_local_target():
    crossing = [(f, m) for f, m in imports("client")
                if m.startswith(RUNTIME) and f not in LOCAL_SEAM]
    assert not crossing, f"the client imports the runtime outside the local target: {crossing}"


@pytest.mark.parametrize("folder", ["rpc", "conf"])
def test_the_wire_and_the_configuration_know_no_component(folder):
    crossing = [(f, m) for f, m in imports(folder) if m.startswith(RUNTIME)]
    assert not crossing, f"{folder}/ imports a runtime component: {crossing}"


# --- every import resolves to its file by the one rule, with no map ------------------

def _module_file(module: str) -> Path | None:
    """``yarnflow.a.b`` -> ``a/b.py`` or ``a/b/__init__.py``; ``yarnflow`` itself is a
    namespace (the repository root, no file)."""
    parts = module.split(".")[1:]
    if not parts:
        return None
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    raise LookupError(module)


def _top_level_names(path: Path) -> set[str]:
    """What a module binds outside its functions and classes (including under
    ``if TYPE_CHECKING:`` and ``try:``), plus PEP 562's ``__getattr__`` exports."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            for field in ("body", "orelse", "finalbody"):     # if, try, with, for
                visit(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    return names


def unresolved(folders: tuple[str, ...]) -> list[str]:
    """Every ``yarnflow`` import in ``folders`` that the one rule does not lead to a
    file (or, for ``from m import name``, to a submodule or a name ``m`` binds)."""
    problems = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "generated" in path.parts or "__pycache__" in path.parts:
                continue
            where = path.relative_to(ROOT)
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.startswith("yarnflow."):
                            try:
                                _module_file(alias.name)
                            except LookupError:
                                problems.append(f"{where}: import {alias.name}")
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                        and (node.module == "yarnflow" or node.module.startswith("yarnflow.")):
                    try:
                        source = _module_file(node.module)
                    except LookupError:
                        problems.append(f"{where}: from {node.module}")
                        continue
                    bound = _top_level_names(source) if source else set()
                    for alias in node.names:
                        try:
                            _module_file(f"{node.module}.{alias.name}")
                        except LookupError:
                            if alias.name not in bound:
                                problems.append(f"{where}: from {node.module} import {alias.name}")
    return problems


def test_every_import_resolves_to_its_file_by_the_one_rule():
    """What an import-graph tool knowing only "yarnflow is the repository root" does."""
    assert _module_file("yarnflow.appmaster.jobmaster.slotpool") == \
        ROOT / "appmaster" / "jobmaster" / "slotpool" / "__init__.py"
    folders = (*product(), "bench", "examples", "tests")
    problems = unresolved(folders)
    assert not problems, "imports that do not resolve to a file:\n" + "\n".join(problems)


def test_the_resolver_finds_a_stale_import(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("X = 1\n")
    (tmp_path / "pkg" / "user.py").write_text(
        "from yarnflow.pkg import X, Y\nimport yarnflow.pkg.gone\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert unresolved(("pkg",)) == ["pkg/user.py: from yarnflow.pkg import Y",
                                    "pkg/user.py: import yarnflow.pkg.gone"]


def test_a_runtime_process_imports_neither_the_client_nor_test_only_code():
    """``yarnflow`` is a namespace: a TaskExecutor or an ApplicationMaster loads its own
    packages, not the pipeline API, and not the fault injector unless a test asks."""
    probe = ("import sys, yarnflow.taskexecutor.runner, yarnflow.appmaster.components; "
             "print(sorted({m.rsplit('.', 1)[0] for m in sys.modules if m.startswith("
             "('yarnflow.client', 'yarnflow.rpc.testing.faults'))}))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


# --- no import cycles ---------------------------------------------------------------

def _module_of(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["yarnflow", *parts])


def _exists(root: Path, module: str) -> bool:
    base = root.joinpath(*module.split(".")[1:])
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:``: they never run, so they make no cycle."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return hidden


def import_graph(root: Path, folders: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the product modules it imports, at its top or inside a function (a
    lazy import is still a dependency: it only moves the failure to run time); an
    ``import`` of ``a.b`` is an edge to ``a.b``, ``from a import x`` to ``a.x`` when that
    is a module, else to ``a``."""
    graph: dict[str, set[str]] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            if "generated" in path.parts or "__pycache__" in path.parts:
                continue
            me = _module_of(root, path)
            tree = ast.parse(path.read_text())
            hidden = _type_checking_only(tree)
            edges = graph.setdefault(me, set())
            for node in ast.walk(tree):
                if id(node) in hidden:
                    continue
                if isinstance(node, ast.Import):
                    edges.update(a.name for a in node.names
                                 if a.name.startswith("yarnflow.") and _exists(root, a.name))
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                        and node.module.startswith("yarnflow."):
                    for alias in node.names:
                        sub = f"{node.module}.{alias.name}"
                        edges.add(sub if _exists(root, sub) else node.module)
            edges.discard(me)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_product_module_imports_itself_round_a_cycle():
    """A cycle makes import order matter, hides which module is the lower layer, and
    breaks the first time someone moves a lazy import to the top."""
    found = cycles(import_graph(ROOT, product()))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_check_sees_lazy_imports_and_skips_type_checking(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from yarnflow.pkg import b\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    import yarnflow.pkg.a\n")
    (tmp_path / "pkg" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nfrom yarnflow.pkg.a import x\n"
        "if TYPE_CHECKING:\n    from yarnflow.pkg import c_user\n")
    (tmp_path / "pkg" / "c_user.py").write_text("from yarnflow.pkg.c import y\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert cycles(graph) == [["yarnflow.pkg.a", "yarnflow.pkg.b"]]


def test_the_executor_and_the_masters_meet_only_through_their_gateways():
    """A TaskExecutor knows a JobMaster and a ResourceManager only as the calls it may
    make on them (their ``gateway`` Protocols), and they know it the same way: neither
    side's implementation can leak into the other's process."""
    crossing = [(f, m) for folder, other in (("taskexecutor", "yarnflow.appmaster"),
                                             ("appmaster", "yarnflow.taskexecutor"))
                for f, m in imports(folder)
                if m.startswith(other) and not m.endswith(".gateway")]
    assert not crossing, f"imports across the executor/master line, not of a gateway: {crossing}"
    assert ("taskexecutor/taskexecutor.py", "yarnflow.appmaster.jobmaster.gateway") \
        in imports("taskexecutor"), "the check would pass vacuously"


# --- the runtime reads its configuration once, into typed settings ---------------------

# Where a runtime module may read an option outside a settings module, and why.
READS_OUTSIDE_SETTINGS = {
    "appmaster/webmonitor/source.py": "the configuration page shows every option's value",
}


def configuration_reads(root: Path, folders: tuple[str, ...]) -> list[str]:
    """Every ``<something>.get(...)`` on a configuration and every ``options.<helper>(...)``
    call in ``folders``, outside their ``settings.py`` modules."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            where = str(path.relative_to(root))
            if path.name == "settings.py" or where in READS_OUTSIDE_SETTINGS:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                owner = ast.unparse(node.func.value)
                reads_option = node.func.attr == "get" and "config" in owner.lower()
                helper = owner == "options" and node.func.attr.islower()
                if reads_option or helper:
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_runtime_components_read_options_only_where_they_start():
    """Flink's JobMasterConfiguration and TaskManagerConfiguration: each component
    parses its options once, into frozen settings, where it starts (its ``settings.py``);
    the code below takes the settings it needs, so a periodic check reads a field and
    no option is parsed twice or copied with another default."""
    found = configuration_reads(ROOT, ("appmaster", "taskexecutor"))
    assert not found, "options read outside a settings module:\n" + "\n".join(found)


def test_the_settings_check_sees_a_read_and_a_helper(tmp_path):
    (tmp_path / "te").mkdir()
    (tmp_path / "te" / "loop.py").write_text(
        "def tick(self):\n    return self.config.get(options.HEARTBEAT_TIMEOUT)\n"
        "def fs(config):\n    return options.filesystem_settings(config)\n"
        "def fine(d):\n    return d.get('x'), options.BATCH_ROWS\n")
    (tmp_path / "te" / "settings.py").write_text("X = config.get(options.BATCH_ROWS)\n")
    assert configuration_reads(tmp_path, ("te",)) == [
        "te/loop.py:2: self.config.get(options.HEARTBEAT_TIMEOUT)",
        "te/loop.py:4: options.filesystem_settings(config)"]
