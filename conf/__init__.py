"""Typed configuration: every option yarnflow reads, with its default and doc."""
from yarnflow.conf.configuration import Configuration, ConfigError
from yarnflow.conf import options

__all__ = ["Configuration", "ConfigError", "options"]
