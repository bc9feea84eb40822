"""What every ``yarnflow`` command shares: the configuration options (``-c``, ``-D``)
and loading them, the session option, and the error exit: a failure the user can fix
is one line naming the problem and the fix, never a traceback."""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable, NoReturn, TypeVar, cast

import click
from rich.console import Console
from rich.markup import escape

from yarnflow.conf import ConfigError, Configuration
from yarnflow.conf.options import Option
from yarnflow.client.targets.yarn_errors import YarnError

F = TypeVar("F", bound=Callable[..., Any])

# what a command may fail with that is the user's to fix (KeyError: the application
# store has no credentials for that application)
USER_ERRORS = (YarnError, ConfigError, KeyError)


def table_console() -> Console:
    """A console for commands that print tables: a terminal's own width, and when the
    output is a pipe or a log (where rich assumes 80 columns and folds every cell) a
    width that keeps a plan's or a job's rows on one line each."""
    return Console() if sys.stdout.isatty() else Console(width=160)


def fail(err: BaseException | str, status: int = 1) -> NoReturn:
    message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    Console().print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(status)


class OptionValue(click.ParamType):  # type: ignore[type-arg]
    """A CLI flag for a configuration option, checked by the option's own parser: the
    flag refuses what ``-D`` and the configuration file refuse, in the same words."""

    def __init__(self, option: Option[Any], metavar: str) -> None:
        self.option = option
        self.name = option.key
        self.metavar = metavar

    def get_metavar(self, param: Any, ctx: Any = None) -> str:
        return self.metavar

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return self.option.parse(value)
        except (TypeError, ValueError) as err:
            self.fail(str(err), param, ctx)


def user_errors(fn: F) -> F:
    """Run a command, turning the failures in ``USER_ERRORS`` into one line and exit 1."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as err:
            fail(err)
    return cast(F, run)


def config_options(fn: F) -> F:
    fn = click.option("-D", "dynamic", multiple=True, metavar="KEY=VALUE",
                      help="Override a configuration option; repeatable, e.g. "
                           "-D yarn.client.timeout=60s.")(fn)
    return click.option("-c", "--conf", "conf_file", type=click.Path(exists=True, dir_okay=False),
                        default=None,
                        help="Configuration file (default: $YARNFLOW_CONF_DIR/yarnflow.yaml).")(fn)


def session_option(fn: F) -> F:
    return click.option("-a", "--application", "session", default="", metavar="APP_ID|NAME",
                        help="The session (default: the newest running one started from "
                             "this account).")(fn)


def load_config(conf_file: str | None, dynamic: tuple[str, ...]) -> Configuration:
    try:
        return Configuration.load(conf_file, dynamic)
    except ConfigError as err:
        raise click.UsageError(str(err)) from None
