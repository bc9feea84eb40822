"""Where the suite's time goes, per tier and per module, printed after the run and
written to test-artifacts/timing.json (issue 54).

``--durations`` names the slowest tests; it does not say what a module costs outside
its tests. Here a module's *setup* column is its fixtures: the dockerised cluster's
start (image builds, hosts, the wait for readiness) in the docker tier's first module,
the secure cluster's in the secure module's; *teardown* is their stops. *span* is wall
time from the module's first report's start to its last one's end, which with
pytest-xdist overlaps other modules on the other worker. The YARN tier, relayed from
the edge host as one fixture, is broken down by its own modules from the edge run's
JUnit files.

Time is not the only measure on a 2-core machine: the run's busy CPU-s and the
machine's utilization (from /proc/stat) come first, and each docker module's CPU on
the cluster's hosts (tests/docker/conftest.py, from the Docker engine's cgroup)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable


CLUSTER_CPU_FILE = "cluster-cpu.json"     # written by tests/docker/conftest.py
_MACHINE_AT_START: tuple[float, float, float] | None = None


def machine_cpu() -> tuple[float, float, float] | None:
    """The machine's busy, idle and stolen CPU seconds since it booted (/proc/stat).
    Stolen time (a hypervisor running another guest on our cores) counts as busy, and
    is named apart: it tells a shared CI host from a slow change."""
    try:
        ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = ticks[3] + ticks[4]            # idle, iowait
    busy = sum(ticks[:8]) - idle          # user nice system irq softirq steal
    steal = ticks[7] if len(ticks) > 7 else 0
    return busy / 100, idle / 100, steal / 100


def start() -> None:
    """Where the run's CPU figures count from (called as the run starts)."""
    global _MACHINE_AT_START
    _MACHINE_AT_START = machine_cpu()


def cpu_line() -> str | None:
    now = machine_cpu()
    if _MACHINE_AT_START is None or now is None:
        return None
    busy, idle, stolen = (now[i] - _MACHINE_AT_START[i] for i in range(3))
    return (f"machine: {busy:.0f} CPU-s busy ({stolen:.0f} of them stolen by other guests), "
            f"{100 * busy / max(busy + idle, 1e-9):.0f} % of its cores over the run")


@dataclass
class ModuleTime:
    tests: int = 0
    setup_s: float = 0.0
    call_s: float = 0.0
    teardown_s: float = 0.0
    first_start: float = float("inf")
    last_stop: float = 0.0
    workers: set[str] = field(default_factory=set)

    def add(self, report: Any) -> None:
        setattr(self, f"{report.when}_s", getattr(self, f"{report.when}_s") + report.duration)
        if report.when == "call":
            self.tests += 1
        start, stop = getattr(report, "start", None), getattr(report, "stop", None)
        if start is not None and stop is not None:
            self.first_start = min(self.first_start, start)
            self.last_stop = max(self.last_stop, stop)
        worker = getattr(getattr(report, "node", None), "gateway", None)
        if worker is not None:
            self.workers.add(worker.id)

    @property
    def total_s(self) -> float:
        return self.setup_s + self.call_s + self.teardown_s

    @property
    def span_s(self) -> float:
        return max(0.0, self.last_stop - self.first_start) if self.last_stop else 0.0


def by_module(reports: Iterable[Any]) -> dict[str, ModuleTime]:
    modules: dict[str, ModuleTime] = defaultdict(ModuleTime)
    for report in reports:
        if getattr(report, "when", None) in ("setup", "call", "teardown"):
            modules[report.nodeid.split("::")[0]].add(report)
    return dict(modules)


def edge_modules(junits: Iterable[Path]) -> dict[str, float]:
    """The YARN tier's seconds per module, summed over its tests (side by side on the
    edge host, so they add up to more than the relay's wall time)."""
    seconds: dict[str, float] = defaultdict(float)
    for junit in junits:
        if not junit.exists():
            continue
        for case in ElementTree.parse(junit).getroot().iter("testcase"):
            module = case.get("classname", "").replace(".", "/") + ".py"
            seconds[module] += float(case.get("time") or 0)
    return dict(seconds)


def table(modules: dict[str, ModuleTime], edge: dict[str, float],
          cluster_cpu: dict[str, float] | None = None) -> list[str]:
    tiers: dict[str, list[str]] = defaultdict(list)
    for name in modules:
        parts = name.split("/")
        tiers[parts[1] if len(parts) > 2 else "other"].append(name)
    lines = [f"{'module':58} {'tests':>5} {'setup':>8} {'call':>8} {'teardown':>8} {'span':>8}"]
    for tier in sorted(tiers):
        names = sorted(tiers[tier], key=lambda n: -modules[n].total_s)
        total = sum(modules[n].total_s for n in names)
        start = min(modules[n].first_start for n in names)
        stop = max(modules[n].last_stop for n in names)
        lines.append(f"[{tier}] {len(names)} modules, {total:.0f} s in tests and fixtures, "
                     f"{max(0.0, stop - start):.0f} s from its first test to its last")
        for name in names:
            m = modules[name]
            lines.append(f"  {name:56} {m.tests:5d} {m.setup_s:8.1f} {m.call_s:8.1f} "
                         f"{m.teardown_s:8.1f} {m.span_s:8.1f}")
    if cluster_cpu:
        lines.append(f"[docker, on its clusters' hosts] {sum(cluster_cpu.values()):.0f} CPU-s "
                     "(not counting its start)")
        for name, seconds in sorted(cluster_cpu.items(), key=lambda item: -item[1]):
            lines.append(f"  {name:56} {'':5} {'':8} {seconds:8.1f} CPU-s")
    if edge:
        lines.append(f"[yarn, on the edge host] {len(edge)} modules, {sum(edge.values()):.0f} s "
                     "in tests (side by side)")
        for name, seconds in sorted(edge.items(), key=lambda item: -item[1]):
            lines.append(f"  {name:56} {'':5} {'':8} {seconds:8.1f}")
    return lines


def report(terminalreporter: Any, artifacts: Path) -> None:
    reports = [r for kind in terminalreporter.stats.values() for r in kind
               if hasattr(r, "when") and hasattr(r, "nodeid")]
    modules = by_module(reports)
    if not modules:
        return
    relayed = any(name.endswith("tests/docker/test_yarn_tier.py") for name in modules)
    edge = edge_modules([artifacts / "yarn-tier-together.xml", artifacts / "yarn-tier-alone.xml"]) \
        if relayed else {}
    cpu_file = artifacts / CLUSTER_CPU_FILE
    cluster_cpu = json.loads(cpu_file.read_text()) if cpu_file.exists() else {}
    terminalreporter.write_sep("=", "time per tier and module (tests/timing.py)")
    machine = cpu_line()
    for line in ([machine] if machine else []) + table(modules, edge, cluster_cpu):
        terminalreporter.write_line(line)
    out = {name: {"tests": m.tests, "setup_s": m.setup_s, "call_s": m.call_s,
                  "teardown_s": m.teardown_s, "span_s": m.span_s, "workers": sorted(m.workers)}
           for name, m in modules.items()}
    (artifacts / "timing.json").write_text(json.dumps({"machine": machine, "modules": out,
                                                       "yarn_edge": edge,
                                                       "cluster_cpu_s": cluster_cpu}, indent=1))
