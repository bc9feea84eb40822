"""A configuration: the default file, then a user file, then ``-D key=value`` overrides."""
from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, TypeVar

from yarnflow.conf.options import (HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT, REGISTRY, RENAMED, Option,
                                   target_defaults)

T = TypeVar("T")
DEFAULT_FILE = Path(__file__).with_name("yarnflow.yaml")
ENV_CONF_DIR = "YARNFLOW_CONF_DIR"


class ConfigError(ValueError):
    """A configuration value or key a user wrote that yarnflow cannot use."""


class Configuration:
    """Raw string-or-number values keyed by option name, parsed on read.

    Values stay raw so the configuration ships to the ApplicationMaster and
    TaskExecutors as plain JSON; unknown keys are refused at once, because a typo in
    ``-D slot.request.timout=5s`` silently ignored is a job that hangs for 5 minutes.
    """

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        for key, value in (values or {}).items():
            self.set_raw(key, value)

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None,
             overrides: Iterable[str] = ()) -> "Configuration":
        """Defaults file, then ``path`` (or ``$YARNFLOW_CONF_DIR/yarnflow.yaml``), then overrides."""
        conf = cls.from_yaml_file(DEFAULT_FILE)
        path = cls.user_file(path)
        if path is not None:
            conf.update(cls.from_yaml_file(path))
        conf.apply_overrides(overrides)
        conf.check()
        return conf

    @staticmethod
    def user_file(path: str | os.PathLike[str] | None = None) -> str | os.PathLike[str] | None:
        """The file a user's settings come from: ``path``, else
        ``$YARNFLOW_CONF_DIR/yarnflow.yaml`` where it exists."""
        if path is None and os.environ.get(ENV_CONF_DIR):
            candidate = Path(os.environ[ENV_CONF_DIR]) / "yarnflow.yaml"
            return candidate if candidate.exists() else None
        return path

    def check(self) -> None:
        """Options that only make sense together: a heartbeat timeout not above the
        interval declares every executor lost between two heartbeats."""
        interval, timeout = self.get(HEARTBEAT_INTERVAL), self.get(HEARTBEAT_TIMEOUT)
        if timeout <= interval:
            raise ConfigError(f"heartbeat.timeout ({timeout:g} s) must be above heartbeat.interval "
                              f"({interval:g} s), or every peer is lost between two heartbeats; "
                              "Fix: raise heartbeat.timeout (Flink uses 50 s for a 10 s interval)")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "Configuration":
        """A ``.json`` file as yarnflow's own processes write it; anything else as YAML."""
        if not str(path).endswith(".json"):
            return cls.from_yaml_file(path)
        try:
            text = Path(path).read_text()
        except FileNotFoundError:
            raise ConfigError(f"configuration file {path} does not exist") from None
        try:
            return cls.from_json(text)
        except json.JSONDecodeError as err:
            raise ConfigError(f"configuration file {path} is not valid JSON: {err}") from None

    @classmethod
    def from_yaml_file(cls, path: str | os.PathLike[str]) -> "Configuration":
        import yaml
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError:
            raise ConfigError(f"configuration file {path} does not exist") from None
        except yaml.YAMLError as err:
            raise ConfigError(f"configuration file {path} is not valid YAML: {err}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"configuration file {path} must be a mapping of option: value")
        return cls(data)

    def apply_overrides(self, overrides: Iterable[str]) -> None:
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"-D {item!r} is not of the form key=value")
            self.set_raw(key.strip(), value.strip())

    def set_raw(self, key: str, value: Any) -> None:
        option = REGISTRY.get(key)
        if option is None and key in RENAMED:
            raise ConfigError(f"configuration option {key!r} is now {RENAMED[key]!r}: rename it")
        if option is None:
            close = difflib.get_close_matches(key, REGISTRY, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "; see conf/options.py for the options"
            raise ConfigError(f"unknown configuration option {key!r}{hint}")
        try:
            option.parse(value)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"bad value for {key}: {err}") from None
        self._values[key] = value

    def set(self, option: Option[T], value: Any) -> "Configuration":
        self.set_raw(option.key, value)
        return self

    def get(self, option: Option[T]) -> T:
        if option.key in self._values:
            return option.parse(self._values[option.key])
        return option.default

    def is_set(self, option: Option[Any]) -> bool:
        """Whether a file or flag set it (a target may pick a different default)."""
        return option.key in self._values

    def for_target(self, target: str) -> "Configuration":
        """A copy with ``target``'s own defaults (options.target_defaults) for the
        options nothing set."""
        config = self.copy()
        for key, value in target_defaults(target).items():
            if key not in self._values:
                config.set_raw(key, value)
        return config

    def update(self, other: "Configuration") -> None:
        self._values.update(other._values)

    def copy(self) -> "Configuration":
        return Configuration(dict(self._values))

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def to_json(self) -> str:
        """How the configuration travels between yarnflow's own processes: users write
        YAML, but JSON's parser is built in, and a TaskExecutor starting beside seven
        others on a busy node should not spend CPU importing a YAML parser."""
        return json.dumps(self._values, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Configuration":
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ConfigError("a shipped configuration must be a JSON object of option: value")
        return cls(data)
