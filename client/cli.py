"""The ``yarnflow`` command line."""
from __future__ import annotations

import atexit
import functools
import logging
import os
import runpy
import sys
import traceback

from typing import Any, NoReturn

import click
from rich.console import Console

from yarnflow.core.ids import JobID
from yarnflow.client.display import (blocked_table, checkpoints_line, speculation_table,
                                     exceptions_table, progress_table, print_decisions,
                                     subtask_table, summary_table)

from yarnflow.conf import ConfigError, options
from yarnflow.client.context import ExecutionContext, JobFailedError, set_context
from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.tracebacks import raised_by_yarnflow, user_line
from yarnflow.client.cli_common import (USER_ERRORS, OptionValue, config_options, fail, load_config, session_option,
                                 table_console, user_errors)
from yarnflow.client.targets.yarn_errors import YarnError
from yarnflow.client.config_cli import config
from yarnflow.client.session_cli import cancel_session_job, history, list_jobs, session, show_session_job



@click.group()
@click.version_option(package_name="yarnflow")
def main() -> None:
    """yarnflow: Flink's FLIP-6 runtime for Python data pipelines, on YARN or locally."""


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("pipeline", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-t", "--target", type=OptionValue(options.TARGET, "TARGET"), default=None,
              help="Where the job runs: local, yarn-per-job or yarn-session (default: "
                   "execution.target, which is 'local').")
@click.option("-p", "--parallelism", type=OptionValue(options.DEFAULT_PARALLELISM, "N"), default=None,
              help="Default parallelism of operators that set none (parallelism.default).")
@config_options
@click.option("--progress/--no-progress", default=None,
              help="Show the live progress display (default: when stdout is a terminal).")
@click.option("--attach/--detached", default=None,
              help="On YARN: follow the job to its end (exit status = the job's) or return "
                   "once YARN accepted the application (default: execution.attached, false).")
@click.option("--subtasks", is_flag=True,
              help="After the summary, list every subtask's records, bytes and seconds.")
@click.option("-a", "--application", "session", default=None, metavar="APP_ID|NAME",
              help="With -t yarn-session: the session to submit to (yarn.application.id; "
                   "default: the newest running one started from this account).")
@click.option("--ui", is_flag=True,
              help="On local: serve the web UI and REST API while the job runs and print "
                   "its URL (local.web-ui). A YARN application always serves its own.")
@click.option("-s", "--from-savepoint", "savepoint", default=None, metavar="DIR",
              help="Start a streaming job from this savepoint (or retained checkpoint), at "
                   "the same parallelism (execution.savepoint.path).")
@click.option("--allow-non-restored-state", is_flag=True, default=False,
              help="With --from-savepoint: drop state of operators the job no longer has "
                   "(execution.savepoint.ignore-unclaimed-state).")
@click.option("-v", "--verbose", is_flag=True, help="Log the runtime's components to stderr.")
def run(pipeline: str, script_args: tuple[str, ...], target: str | None,
        parallelism: int | None, dynamic: tuple[str, ...], conf_file: str | None,
        progress: bool | None, attach: bool | None, subtasks: bool, session: str | None,
        ui: bool, savepoint: str | None, allow_non_restored_state: bool, verbose: bool) -> None:
    """Run PIPELINE (a Python script that builds a Pipeline and calls execute()) like
    `flink run`. On `local` the exit status is the job's; on YARN the client returns
    once the application is accepted, printing its id (unless --attach); on a
    session, once the Dispatcher accepted the job, printing the job id.
    SCRIPT_ARGS go to the script's sys.argv."""
    console = table_console()
    if verbose:     # else the runtime logs to files only (a local run: beside its executors')
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load_config(conf_file, dynamic)
    if parallelism is not None:
        config.set(options.DEFAULT_PARALLELISM, parallelism)
    if target is not None:
        config.set(options.TARGET, target)
    if attach is not None:
        config.set(options.ATTACHED, attach)
    if session is not None:
        config.set(options.YARN_APPLICATION_ID, session)
    if ui:
        config.set(options.LOCAL_WEB_UI, True)
    if savepoint is not None:
        config.set(options.SAVEPOINT_PATH, savepoint)
    if allow_non_restored_state:
        config.set(options.SAVEPOINT_IGNORE_UNCLAIMED, True)
    context = ExecutionContext(config, config.get(options.TARGET),
                               sys.stdout.isatty() if progress is None else progress, console,
                               show_subtasks=subtasks)
    _run_script(pipeline, script_args, context, verbose)


def _run_script(pipeline: str, script_args: tuple[str, ...], context: ExecutionContext,
                verbose: bool) -> None:
    """Run the user's script as ``__main__`` with ``context`` set, as ``flink run`` does;
    its exit status says how its jobs ended."""
    console = context.console
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
    except SyntaxError as err:
        where = f"{err.filename}, line {err.lineno}" if err.filename else pipeline
        fail(f"{where}: {err.msg} (a syntax error in the pipeline script; fix the script)", 2)
    except (InvalidPipelineError, ConfigError) as err:
        fail(err, 2)
    except Exception as err:  # noqa: BLE001 - the script's own failure, at the script's line
        if verbose:
            console.print(traceback.format_exc(), markup=False, highlight=False)
        if isinstance(err, USER_ERRORS) and raised_by_yarnflow(err):
            fail(err)              # yarnflow's answer to a call the user made: it says it all
        line = user_line(err)
        fail(f"{type(err).__name__}: {err}" + (f" ({line})" if line else ""))
    finally:
        sys.argv = saved_argv
        set_context(None)
    if not context.results:
        fail(f"{pipeline} ran but never called execute() on a Pipeline, so no job was "
             "submitted", 2)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("pipeline", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-p", "--parallelism", type=OptionValue(options.DEFAULT_PARALLELISM, "N"), default=None,
              help="Default parallelism of operators that set none (parallelism.default).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the plan as JSON (vertices, inputs, estimates, shared slots, "
                   "executors, joins) instead of a table.")
@click.option("--passes", is_flag=True,
              help="Also print the plan after each of the planner's passes (bind, "
                   "local-steps, schemas, estimates, join-strategies, parallelism, "
                   "exchanges, pipeline-breakers, adaptive, validate, chaining).")
@config_options
def explain(pipeline: str, script_args: tuple[str, ...], parallelism: int | None,
            as_json: bool, passes: bool, dynamic: tuple[str, ...], conf_file: str | None) -> None:
    """Print the plan PIPELINE would run with — vertices, parallelism, slot profiles,
    ship strategies, estimated rows and bytes, and why each join got its strategy —
    without running it. SCRIPT_ARGS go to the script's sys.argv."""
    config = load_config(conf_file, dynamic)
    if parallelism is not None:
        config.set(options.DEFAULT_PARALLELISM, parallelism)
    console = table_console()
    context = ExecutionContext(config, "explain", False, console, explain_json=as_json,
                               explain_passes=passes)
    _run_script(pipeline, script_args, context, False)


def _is_application(ref: str) -> bool:
    return ref.startswith("application_")


@main.command()
@click.argument("app_id", metavar="APP_ID|JOB_ID")
@click.option("--subtasks", is_flag=True, help="Also list every subtask's records, bytes and seconds.")
@session_option
@config_options
@user_errors
def status(app_id: str, dynamic: tuple[str, ...], conf_file: str | None, subtasks: bool,
           session: str) -> None:
    """Show a YARN application's state, its job's progress and metrics while it runs,
    and the failure (with the traceback summary) when it failed. Given a job id of a
    session, that job's, live or from the history."""
    config = load_config(conf_file, dynamic)
    if not _is_application(app_id):
        show_session_job(JobID(app_id), session, config, subtasks)
        return
    from yarnflow.client.targets.yarn_apps import YarnApplication
    with YarnApplication(app_id, config.get(options.YARN_CLIENT_TIMEOUT)) as app:
        st = app.status()
    console = table_console()
    console.print(f"{st.app_id}: {st.state} (final status {st.final_status})", highlight=False)
    console.print(f"tracking URL: {st.tracking_url}", highlight=False)
    if st.details is not None:
        console.print(progress_table(st.details))
        console.print(summary_table(st.details))
        if st.details.checkpoints:
            console.print(checkpoints_line(st.details), markup=False, highlight=False,
                          soft_wrap=True)
        print_decisions(st.details, console)
        if subtasks:
            console.print(subtask_table(st.details))
        if st.details.exceptions:
            console.print(exceptions_table(st.details))
        if st.details.blocked_hosts:
            console.print(blocked_table(st.details))
        if st.details.speculations:
            console.print(speculation_table(st.details))
        for said in st.details.warnings:
            console.print(f"warning: {said}", markup=False, highlight=False, soft_wrap=True)
    if st.diagnostics:
        console.print(st.diagnostics, markup=False, highlight=False)


@main.command()
@click.argument("app_id", metavar="APP_ID|JOB_ID")
@session_option
@config_options
@user_errors
def cancel(app_id: str, dynamic: tuple[str, ...], conf_file: str | None, session: str) -> None:
    """Cancel the job of a YARN application (which ends KILLED), or, given a job id
    of a session, that job alone."""
    config = load_config(conf_file, dynamic)
    if not _is_application(app_id):
        cancel_session_job(JobID(app_id), session, config)
        return
    from yarnflow.client.targets.yarn_apps import YarnApplication
    with YarnApplication(app_id, config.get(options.YARN_CLIENT_TIMEOUT)) as app:
        st = app.cancel()
    Console().print(f"{st.app_id}: {st.state} (final status {st.final_status})", highlight=False)


@main.command()
@click.argument("app_id", metavar="APP_ID|JOB_ID")
@click.argument("directory", required=False, default="")
@session_option
@config_options
@user_errors
def savepoint(app_id: str, directory: str, dynamic: tuple[str, ...], conf_file: str | None,
              session: str) -> None:
    """Take a savepoint of a running streaming job into DIRECTORY (default:
    state.savepoints.dir) and print where it is; the job runs on. `yarnflow run
    --from-savepoint` starts a job from it."""
    config = load_config(conf_file, dynamic)
    location = _savepoint(app_id, directory, False, session, config)
    Console().print(f"savepoint of {app_id}: {location}", highlight=False, soft_wrap=True)


@main.command()
@click.argument("app_id", metavar="APP_ID|JOB_ID")
@click.option("--savepoint", "directory", default="", metavar="DIR",
              help="Where the final savepoint goes (default: state.savepoints.dir).")
@session_option
@config_options
@user_errors
def stop(app_id: str, directory: str, dynamic: tuple[str, ...], conf_file: str | None,
         session: str) -> None:
    """Stop a streaming job gracefully: a final savepoint, whose output is committed
    (Flink's `stop`), then the job ends. `cancel` ends it at once instead."""
    config = load_config(conf_file, dynamic)
    location = _savepoint(app_id, directory, True, session, config)
    Console().print(f"{app_id} stopped with savepoint {location}", highlight=False,
                    soft_wrap=True)


def _savepoint(ref: str, directory: str, terminate: bool, session: str,
               config: Any) -> str:
    """A savepoint of a per-job application's job, or of a session's job by its id."""
    timeout = config.get(options.CHECKPOINT_TIMEOUT) + config.get(options.YARN_CLIENT_TIMEOUT)
    if _is_application(ref):
        from yarnflow.client.targets.yarn_apps import YarnApplication
        with YarnApplication(ref, config.get(options.YARN_CLIENT_TIMEOUT)) as app:
            return app.savepoint(directory, terminate, timeout)
    from yarnflow.client.session_cli import session_savepoint
    return session_savepoint(JobID(ref), directory, terminate, session, config, timeout)


@main.command()
@click.argument("app_id")
@config_options
@user_errors
def logs(app_id: str, dynamic: tuple[str, ...], conf_file: str | None) -> None:
    """Print the logs of every container of a YARN application (ApplicationMaster and
    TaskExecutors), running or finished."""
    from yarnflow.client.targets.yarn_report import application_logs
    config = load_config(conf_file, dynamic)
    click.echo(application_logs(app_id, config.get(options.YARN_CLIENT_TIMEOUT) * 4))


@main.command()
@click.argument("app_id", metavar="APP_ID")
@config_options
@user_errors
def ui(app_id: str, dynamic: tuple[str, ...], conf_file: str | None) -> None:
    """Print the URL of a running YARN application's web UI (per-job or session): its
    tracking URL, through the ResourceManager's proxy. An ended application has none;
    `yarnflow history` shows its jobs."""
    from yarnflow.core.contract import web_page_url
    from yarnflow.client.targets.yarn_apps import YarnApplication
    config = load_config(conf_file, dynamic)
    with YarnApplication(app_id, config.get(options.YARN_CLIENT_TIMEOUT)) as app:
        st = app.status(with_details=False)
    if st.finished:
        fail(f"{app_id} has ended ({st.state}, final status {st.final_status}), and its web UI "
             "with it. Fix: `yarnflow history` lists its jobs, `yarnflow status "
             f"{app_id}` shows how it ended")
    if st.state != "RUNNING" or not st.tracking_url:
        fail(f"{app_id} is {st.state}: YARN has not started its ApplicationMaster yet, so "
             "there is no web UI. Fix: try again once it is RUNNING")
    click.echo(web_page_url(st.tracking_url))


@main.group(name="fs")
def fs_group() -> None:
    """The job's file systems: put data where a cluster job reads it, list, remove.
    Paths without a scheme are on fs.defaultFS of HADOOP_CONF_DIR, as for `hadoop fs`."""


def _fs_command(fn: Any) -> Any:
    """Run a file command, turning its errors into one line."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except (OSError, ValueError) as err:
            fail(err)
    return run


@fs_group.command(name="put")
@click.argument("source", type=click.Path(exists=True))
@click.argument("destination")
@click.option("-f", "--force", is_flag=True, help="Replace an existing destination.")
@_fs_command
def fs_put(source: str, destination: str, force: bool) -> None:
    """Copy local SOURCE (a file or a directory tree) to DESTINATION."""
    from yarnflow.client import files
    click.echo(files.put(source, destination, overwrite=force))


@fs_group.command(name="ls")
@click.argument("path")
@_fs_command
def fs_ls(path: str) -> None:
    """List PATH (a file, a directory or a glob) with sizes; directories end in /."""
    from yarnflow.client import files
    for uri, size in files.ls(path):
        click.echo(f"{'':>14}  {uri}/" if size is None else f"{size:>14,}  {uri}")


@fs_group.command(name="rm")
@click.argument("path")
@_fs_command
def fs_rm(path: str) -> None:
    """Remove PATH (a whole directory tree); nothing if it is not there."""
    from yarnflow.client import files
    click.echo(f"removed {files.rm(path)}")


@main.group(name="env")
def env_group() -> None:
    """The Python environment YARN's containers run (yarn.ship-environment)."""


@env_group.command(name="pack")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where the archive goes (default: the packing cache under ~/.yarnflow).")
@click.option("--python-prefix", default=None, metavar="PREFIX",
              help="Where the nodes' own Python lives (yarn.environment.python-prefix, default /usr).")
def env_pack(output: str | None, python_prefix: str | None) -> None:
    """Pack this virtual environment for the nodes, editable installs included (each as
    its wheel), into an archive for -D yarn.ship-environment=ARCHIVE. YARN targets do
    this themselves when yarn.ship-environment and yarn.python are unset."""
    import shutil
    from yarnflow.conf import Configuration
    from yarnflow.client.targets import environments
    from yarnflow.client.targets.app_store import yarnflow_home
    try:
        prefix = environments.virtualenv_prefix()
        node_prefix = python_prefix or Configuration.load().get(options.YARN_ENVIRONMENT_PYTHON_PREFIX)
        archive = environments.pack(prefix, node_prefix, yarnflow_home() / "environments")
        if output:
            shutil.copyfile(archive, output)
    except (YarnError, OSError) as err:
        fail(err)
    click.echo(output or str(archive))


main.add_command(session)
main.add_command(list_jobs)
main.add_command(history)
main.add_command(config)



def entry() -> NoReturn:
    """The ``yarnflow`` command: the click group, then an exit that skips the
    interpreter's teardown. Native threads of gRPC, Arrow and the Hadoop client may
    still be running then, and tearing down beneath them aborted the process
    ("terminate called without an active exception", exit -6) after a job that had
    finished. Everything that matters is flushed first."""
    code: object = 0
    try:
        main.main(prog_name="yarnflow")     # click ends with SystemExit, also on success
    except SystemExit as done:
        code = done.code
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()       # what the user's script registered, and logging's flush
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe: nothing more to say
            pass
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


if __name__ == "__main__":
    entry()
