"""``yarnflow config``: every option with the value a run would use and what set it.

A user who wonders why a job waited 5 minutes for a slot should not have to read
conf/options.py, their configuration file and the target's own defaults side by side:
this prints the one value in effect, as ``yarnflow run`` with the same flags would load
it, and where it came from (default, the target, the file, or ``-D``)."""
from __future__ import annotations

import difflib
import os
from typing import Any

import click
from rich.table import Table

from yarnflow.client.cli_common import OptionValue, config_options, load_config, table_console
from yarnflow.conf import Configuration, options
from yarnflow.conf.options import REGISTRY, Option, target_defaults
from yarnflow.conf.reference import kind, sections, show


@click.command("config")
@click.argument("keys", nargs=-1, metavar="[KEY|PREFIX]...")
@click.option("-t", "--target", type=OptionValue(options.TARGET, "TARGET"), default=None,
              help="The target whose values to show: local, yarn-per-job or yarn-session "
                   "(default: execution.target).")
@config_options
@click.option("--changed", is_flag=True, help="Only the options not at their default.")
@click.option("-l", "--long", "describe", is_flag=True,
              help="Add each option's type, default and description.")
def config(keys: tuple[str, ...], target: str | None, dynamic: tuple[str, ...],
           conf_file: str | None, changed: bool, describe: bool) -> None:
    """List configuration options and the value of each in effect for a target: the
    defaults, then the target's own, then the configuration file, then -D. KEYS narrow
    the list to those options or to keys starting with a prefix (`yarnflow config
    yarn.` lists YARN's)."""
    effective = load_config(conf_file, dynamic)
    target = target or effective.get(options.TARGET)
    effective = effective.for_target(target)
    origin = _origins(conf_file, dynamic, target)
    wanted = _matching(keys)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("key", "value", "set by") + (("type", "default", "description") if describe else ()):
        table.add_column(column, overflow="fold")
    for title, listed in sections():
        rows = [option for option in listed if option.key in wanted
                and (not changed or effective.get(option) != option.default)]
        if not rows:
            continue
        table.add_row(f"[dim]# {title}[/]")
        for option in rows:
            value = show(option, effective.get(option))
            cells = [option.key, value or "(empty)", origin.get(option.key, "default")]
            if describe:
                cells += [kind(option), show(option, option.default) or "(empty)", option.doc]
            table.add_row(*cells)
    table_console().print(table, soft_wrap=not describe)


def _origins(conf_file: str | None, dynamic: tuple[str, ...], target: str) -> dict[str, str]:
    """What set each option that is not at its built-in default, the last layer winning."""
    origin = {key: f"target {target}" for key in target_defaults(target)}
    path = Configuration.user_file(conf_file)
    if path is not None:
        origin.update({key: os.fspath(path) for key in Configuration.from_yaml_file(path).to_dict()})
    flags = Configuration()
    flags.apply_overrides(dynamic)
    origin.update({key: "-D" for key in flags.to_dict()})
    return origin


def _matching(keys: tuple[str, ...]) -> set[str]:
    """The user options whose key is one of ``keys`` or starts with one; a name that
    matches nothing is refused with the nearest key, as -D refuses it."""
    known: list[Option[Any]] = [option for _, listed in sections() for option in listed]
    if not keys:
        return {option.key for option in known}
    found: set[str] = set()
    for wanted in keys:
        hits = {option.key for option in known if option.key == wanted or option.key.startswith(wanted)}
        if not hits:
            close = difflib.get_close_matches(wanted, REGISTRY, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise click.UsageError(f"no configuration option is or starts with {wanted!r}{hint}")
        found |= hits
    return found
