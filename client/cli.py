"""The ``yarnflow`` command line."""
from __future__ import annotations

import logging
import os
import runpy
import sys

import click
from rich.console import Console

from yarnflow.conf import ConfigError, Configuration, options
from yarnflow.context import ExecutionContext, JobFailedError, set_context
from yarnflow.jobgraph import InvalidPipelineError

TARGETS = ["local"]   # yarn-per-job and yarn-session arrive with the YARN driver


@click.group()
@click.version_option(package_name="yarnflow")
def main() -> None:
    """yarnflow: Flink's FLIP-6 runtime for Python data pipelines, on YARN or locally."""


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("pipeline", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-t", "--target", type=click.Choice(TARGETS), default=None,
              help="Where the job runs (default: execution.target, which is 'local').")
@click.option("-p", "--parallelism", type=click.IntRange(min=1), default=None,
              help="Default parallelism of operators that set none (parallelism.default).")
@click.option("-D", "dynamic", multiple=True, metavar="KEY=VALUE",
              help="Override a configuration option; repeatable, e.g. -D slot.request.timeout=60s.")
@click.option("-c", "--conf", "conf_file", type=click.Path(exists=True, dir_okay=False),
              default=None, help="Configuration file (default: $YARNFLOW_CONF_DIR/yarnflow.yaml).")
@click.option("--progress/--no-progress", default=None,
              help="Show the live progress display (default: when stdout is a terminal).")
@click.option("-v", "--verbose", is_flag=True, help="Log the runtime's components to stderr.")
def run(pipeline: str, script_args: tuple[str, ...], target: str | None,
        parallelism: int | None, dynamic: tuple[str, ...], conf_file: str | None,
        progress: bool | None, verbose: bool) -> None:
    """Run PIPELINE (a Python script that builds a Pipeline and calls execute()) like
    `flink run`: the exit status is the job's. SCRIPT_ARGS go to the script's sys.argv."""
    console = Console()
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = Configuration.load(conf_file, dynamic)
        if parallelism is not None:
            config.set(options.DEFAULT_PARALLELISM, parallelism)
        if target is not None:
            config.set(options.TARGET, target)
    except ConfigError as err:
        raise click.UsageError(str(err)) from None
    context = ExecutionContext(config, config.get(options.TARGET),
                               sys.stdout.isatty() if progress is None else progress, console)
    set_context(context)
    saved_argv = sys.argv
    sys.argv = [pipeline, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(pipeline)))
    try:
        runpy.run_path(pipeline, run_name="__main__")
    except JobFailedError as err:
        detail = err.result.failure_detail
        if detail and verbose:
            console.print(detail, markup=False, highlight=False)
        sys.exit(1)
    except (InvalidPipelineError, ConfigError) as err:
        console.print(f"[bold red]error:[/] {err}", highlight=False)
        sys.exit(2)
    finally:
        sys.argv = saved_argv
        set_context(None)
    if not context.results:
        console.print(f"[bold red]error:[/] {pipeline} ran but never called execute() on a "
                      "Pipeline, so no job was submitted")
        sys.exit(2)


if __name__ == "__main__":
    main()
