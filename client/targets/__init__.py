"""Deployment targets: where a JobGraph runs.

A target's module imports ``base.py`` (what every target is); this package's
``make_target`` is the one place that knows them all, and imports each only when it is
chosen (a ``local`` run loads no YARN client)."""
from __future__ import annotations

from yarnflow.client.targets.base import Target
from yarnflow.conf import ConfigError, Configuration


def make_target(name: str, config: Configuration) -> Target:
    """The target by its name (``execution.target``); YARN targets read the Hadoop
    configuration here, so a job is checked against what the cluster grants."""
    if name == "local":
        from yarnflow.client.targets.local import LocalTarget
        return LocalTarget(config)
    if name == "yarn-per-job":
        from yarnflow.client.targets.yarn import YarnPerJobTarget
        return YarnPerJobTarget(config)
    if name == "yarn-session":
        from yarnflow.client.targets.session import YarnSessionTarget
        return YarnSessionTarget(config)
    raise ConfigError(f"execution.target: unknown target {name!r}; use local, yarn-per-job "
                      "or yarn-session")
