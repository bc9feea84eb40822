"""A packed Python environment for the nodes, made from the client's own virtual
environment: what Spark users do by hand with venv-pack, done once per environment.

venv-pack packs the environment's files and rewrites its ``bin/python`` link to the
nodes' interpreter (``--python-prefix``): the nodes need the same Python minor
version, not the client's paths. Editable installs (``pip install -e``) point back
at a source checkout the nodes do not have; venv-pack refuses the old kind and
silently packs the new kind (an import hook naming the checkout), so each editable
project is replaced in the archive by its own wheel, built from that checkout.

An archive is named by a digest of what it is made of (every file's path, size and
modification time, the editable projects' sources, the nodes' prefix), so packing
the same environment again costs a directory walk, not a new archive.
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from yarnflow.client.targets.yarn_errors import YarnError

ARCHIVES_KEPT = 3


@dataclass(frozen=True)
class Editable:
    """A project installed with ``pip install -e``: its distribution and checkout."""
    name: str
    dist_info: str          # the .dist-info folder's name in site-packages
    source: Path


def virtualenv_prefix(prefix: str | None = None) -> Path:
    """The virtual environment to pack: the client's own unless named."""
    path = Path(prefix or sys.prefix)
    if not (path / "pyvenv.cfg").exists():
        raise YarnError(
            f"the client's Python ({sys.executable}) is not in a virtual environment, so there is "
            "nothing to ship to the nodes. Fix: run yarnflow from a virtual environment (python -m "
            "venv), set yarn.ship-environment to a packed one (venv-pack or conda-pack), or set "
            "yarn.python to an interpreter with yarnflow installed on every node")
    return path


def site_packages(prefix: Path) -> Path:
    found = sorted(prefix.glob("lib/python3*/site-packages"))
    if len(found) != 1:
        raise YarnError(f"{prefix} has {len(found)} site-packages folders; expected one")
    return found[0]


def python_version(prefix: Path) -> str:
    """The environment's Python as major.minor, from its lib/pythonX.Y folder."""
    return site_packages(prefix).parent.name.removeprefix("python")


def editable_projects(prefix: Path) -> list[Editable]:
    found = []
    for dist in metadata.distributions(path=[str(site_packages(prefix))]):
        text = dist.read_text("direct_url.json")
        if not text:
            continue
        direct = json.loads(text)
        if not direct.get("dir_info", {}).get("editable"):
            continue
        url = urlsplit(direct.get("url", ""))
        source = Path(unquote(url.path))
        if url.scheme != "file" or not source.is_dir():
            raise YarnError(f"the editable install of {dist.metadata['Name']} points at {direct.get('url')}, "
                            "which is not a folder here. Fix: install it without -e")
        dist_info = Path(str(dist._path)).name   # type: ignore[attr-defined]   # PathDistribution
        found.append(Editable(dist.metadata["Name"], dist_info, source))
    return found


SKIPPED = {"__pycache__", ".git", "build", "dist", ".mypy_cache", ".pytest_cache", ".venv"}


def project_files(source: Path) -> list[Path]:
    """An editable project's own files, relative to its checkout: what git tracks or
    would (in a git checkout), else every file outside build output and caches."""
    listed = subprocess.run(["git", "-C", str(source), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, timeout=60)
    if listed.returncode == 0:
        return sorted(Path(p) for p in listed.stdout.decode().split("\0")
                      if p and (source / p).is_file())
    found = []
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED and not d.endswith(".egg-info")]
        found += [Path(dirpath, f).relative_to(source) for f in filenames]
    return sorted(found)


def environment_digest(prefix: Path, python_prefix: str, editables: list[Editable]) -> str:
    digest = hashlib.sha256(f"{python_prefix}\n".encode())
    files = [prefix / p for p in walk(prefix)]
    files += [e.source / p for e in editables for p in project_files(e.source)]
    for path in files:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]


def walk(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        found += [Path(dirpath, f).relative_to(root) for f in sorted(filenames)]
    return found


def pack(prefix: Path, python_prefix: str, cache_dir: Path) -> Path:
    """The environment at ``prefix`` as a .tar.gz whose ``bin/python`` runs the nodes'
    ``<python_prefix>/bin/pythonX.Y``; from ``cache_dir`` when nothing changed."""
    editables = editable_projects(prefix)
    key = environment_digest(prefix, python_prefix, editables)
    archive = cache_dir / f"env-{key}.tar.gz"
    if archive.exists():
        return archive
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Clients submitting at once from a fresh environment pack it once: the others wait
    # for the first one's archive instead of each spending minutes of CPU on a copy.
    with open(cache_dir / ".pack.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.exists():
            return archive
        return _pack(prefix, python_prefix, cache_dir, editables, archive)


def _pack(prefix: Path, python_prefix: str, cache_dir: Path, editables: list[Editable],
          archive: Path) -> Path:
    try:
        import venv_pack
    except ImportError:
        raise YarnError("packing the environment needs venv-pack. Fix: pip install venv-pack "
                        "(or install yarnflow[yarn])") from None
    version = python_version(prefix)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        tar = Path(tmp) / "env.tar"
        lib = site_packages(prefix).relative_to(prefix).as_posix()
        try:
            env = venv_pack.Env(str(prefix))
            for editable in editables:    # the import hook and metadata naming the checkout
                env = env.exclude(f"{lib}/{editable.dist_info}/*")
                normalized = editable.name.replace("-", "_")
                env = env.exclude(f"{lib}/__editable__*{normalized}*")
                env = env.exclude(f"{lib}/__pycache__/__editable__*{normalized}*")
            # venv-pack's own --python-prefix rewrites link targets as strings
            # (/usr/bin/python3 became /usr/bin/python3.113): links are redone below
            env.pack(output=str(tar), format="tar", force=True, verbose=False)
        except venv_pack.VenvPackException as err:
            first = str(err).strip().splitlines()[0]
            raise YarnError(f"venv-pack cannot pack {prefix}: {first}. Fix: reinstall editable "
                            "projects with a current pip (pip install -e), or without -e") from None
        extra = install_wheels(editables, Path(tmp)) if editables else None
        partial = Path(tmp) / "env.tar.gz"
        with tarfile.open(tar) as src, tarfile.open(partial, "w:gz", compresslevel=1) as dst:
            for member in src:
                if member.name == "pyvenv.cfg":
                    data = pyvenv_cfg(src.extractfile(member).read().decode(),   # type: ignore[union-attr]
                                      python_prefix, version).encode()
                    member.size = len(data)
                    dst.addfile(member, io.BytesIO(data))
                    continue
                if is_interpreter_link(member):
                    member.linkname = f"{python_prefix}/bin/python{version}"
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
            if extra is not None:
                for path in sorted(extra.iterdir()):
                    if path.name != "bin":      # console scripts name the client's interpreter
                        dst.add(str(path), arcname=f"{lib}/{path.name}")
        partial.rename(archive)
    for old in sorted(cache_dir.glob("env-*.tar.gz"), key=lambda p: p.stat().st_mtime)[:-ARCHIVES_KEPT]:
        old.unlink(missing_ok=True)
    return archive


def is_interpreter_link(member: tarfile.TarInfo) -> bool:
    """bin/python, bin/python3 or bin/pythonX.Y linking to the client's interpreter by
    absolute path (the others link to these by name)."""
    name = PurePosixPath(member.name)
    return (member.issym() and name.parent.as_posix() == "bin" and name.name.startswith("python")
            and member.linkname.startswith("/"))


def pyvenv_cfg(text: str, python_prefix: str, version: str) -> str:
    """The environment's pyvenv.cfg pointing at the nodes' interpreter: ``home`` is
    where site.py finds the standard library."""
    lines = []
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip()
        if key == "home":
            line = f"home = {python_prefix}/bin"
        elif key == "executable":
            line = f"executable = {python_prefix}/bin/python{version}"
        elif key == "command":
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"


def install_wheels(editables: list[Editable], tmp: Path) -> Path:
    """Each editable project as its wheel installs it, in a folder laid out like
    site-packages."""
    wheels, target = tmp / "wheels", tmp / "site-packages"
    for editable in editables:
        # from a copy of the project's files: a build in the checkout would leave build/
        # and egg-info there, and reuse modules its build/ kept of an older source
        copy = tmp / "sources" / editable.dist_info
        for rel in project_files(editable.source):
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(editable.source / rel, copy / rel)
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                                str(copy)], capture_output=True, text=True, timeout=600)
        if built.returncode != 0:
            raise YarnError(f"building a wheel of the editable {editable.name} from {editable.source} "
                            f"failed: {built.stderr.strip().splitlines()[-1:]}. Fix: install it without -e")
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--no-compile",
                                "--target", str(target), *map(str, wheels.glob("*.whl"))],
                               capture_output=True, text=True, timeout=600)
    if installed.returncode != 0:
        raise YarnError(f"unpacking the editable projects' wheels failed: {installed.stderr.strip()[-500:]}")
    return target
