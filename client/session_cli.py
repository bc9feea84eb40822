"""The session commands of the ``yarnflow`` CLI: ``session start|list|stop``, the
jobs of a session (``list``, and ``status``/``cancel`` of a job id), and ``history``
of finished jobs, which outlives the session."""
from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from yarnflow.core.ids import JobID
from yarnflow.client.cli_common import (OptionValue, config_options, fail, load_config, session_option,
                                 table_console, user_errors)
from yarnflow.conf import Configuration, options
from yarnflow.client.display import jobs_table, print_summary, progress_table
from yarnflow.client.targets.yarn_errors import YarnError


@click.group()
def session() -> None:
    """Start, list and stop yarn-session applications (FLIP-6 session mode): one YARN
    application whose Dispatcher runs many jobs on shared, warm TaskExecutors."""


@session.command("start")
@click.option("--name", default=None, help="The session's YARN application name "
              "(default: yarnflow-session); `-a NAME` finds it later.")
@click.option("--min-executors", type=OptionValue(options.SESSION_MIN_EXECUTORS, "N"), default=None,
              help="TaskExecutors started at once and kept warm however long they idle "
                   "(session.min-executors).")
@config_options
@user_errors
def session_start(name: str | None, min_executors: int | None, dynamic: tuple[str, ...],
                  conf_file: str | None) -> None:
    """Start a session and return once its Dispatcher accepts jobs; prints the
    application id."""
    from yarnflow.client.targets.session import start_session
    console = Console()
    config = load_config(conf_file, dynamic)
    started = start_session(config, name, config.get(options.SESSION_MIN_EXECUTORS)
                            if min_executors is None else min_executors)
    console.print(f"started session [bold]{started.name}[/] as YARN application "
                  f"[bold]{started.app_id}[/]", highlight=False, soft_wrap=True)
    console.print(f"tracking URL: {started.tracking_url}", highlight=False, soft_wrap=True)
    console.print(f"container sizes: {started.container_sizes}", highlight=False, soft_wrap=True)
    console.print(f"history: {started.history_dir}", highlight=False, soft_wrap=True)
    console.print(f"submit with: yarnflow run -t yarn-session -a {started.app_id} PIPELINE.py",
                  highlight=False, soft_wrap=True)


@session.command("list")
@config_options
@user_errors
def session_list(dynamic: tuple[str, ...], conf_file: str | None) -> None:
    """The running yarnflow sessions on the cluster, with their jobs and executors
    where this account holds the session's certificate."""
    from yarnflow.client.targets.dispatcher_client import DispatcherClient
    from yarnflow.client.targets.session import list_sessions
    timeout = load_config(conf_file, dynamic).get(options.YARN_CLIENT_TIMEOUT)
    reports = list_sessions(timeout)
    table = Table(title="yarnflow sessions", title_justify="left")
    for column in ("application", "name", "user", "state", "jobs running", "jobs ended",
                   "executors", "free slots"):
        table.add_column(column)
    for report in reports:
        counts = ["-"] * 4
        try:
            with DispatcherClient(report.id, min(timeout, 5.0)) as client:
                o = client.overview()
            counts = [str(o.running_jobs), str(o.finished_jobs), str(o.executors),
                      f"{o.free_slots}/{o.total_slots}"]
        except (YarnError, KeyError):
            pass       # not ours, or not up yet
        table.add_row(report.id, report.name, report.user, str(report.state), *counts)
    Console().print(table)


@session.command("stop")
@click.argument("ref", metavar="APP_ID|NAME")
@config_options
@user_errors
def session_stop(ref: str, dynamic: tuple[str, ...], conf_file: str | None) -> None:
    """Stop a session: running jobs are cancelled and archived, then the application
    ends SUCCEEDED. Its history stays readable with `yarnflow history`."""
    from yarnflow.client.targets.session import resolve_session, stop_session
    config = load_config(conf_file, dynamic)
    timeout = config.get(options.YARN_CLIENT_TIMEOUT)
    app_id = resolve_session(ref, timeout)
    final = stop_session(app_id, timeout, timeout + 2 * config.get(options.JOB_CANCEL_TIMEOUT))
    Console().print(f"{final.app_id}: {final.state} (final status {final.final_status})",
                    highlight=False)


@click.command("list")
@session_option
@config_options
@user_errors
def list_jobs(session: str, dynamic: tuple[str, ...], conf_file: str | None) -> None:
    """The jobs of a session: running ones first, then those that ended."""
    from yarnflow.client.targets.dispatcher_client import DispatcherClient
    from yarnflow.client.targets.session import resolve_session
    timeout = load_config(conf_file, dynamic).get(options.YARN_CLIENT_TIMEOUT)
    app_id = resolve_session(session, timeout)
    with DispatcherClient(app_id, timeout) as client:
        jobs = client.list_jobs()
    Console().print(jobs_table(jobs, f"jobs of session {app_id}"))


def session_of(job_id: JobID, session: str, config: Configuration, store: Any) -> str:
    """The session application that runs ``job_id`` (``session`` when named)."""
    from yarnflow.client.targets.session import resolve_session
    return (None if session else store.app_of_job(job_id)) or \
        resolve_session(session, config.get(options.YARN_CLIENT_TIMEOUT), store)


@user_errors
def show_session_job(job_id: JobID, session: str, config: Configuration, subtasks: bool) -> None:
    """`yarnflow status JOB_ID`: live from the session's Dispatcher, or from the
    history archive once the session is gone."""
    from yarnflow.client.targets.app_store import ApplicationStore
    from yarnflow.client.targets.history import archived_job
    from yarnflow.client.targets.dispatcher_client import DispatcherClient, JobNotFound
    from yarnflow.client.targets.session import resolve_session
    console = table_console()
    store = ApplicationStore()
    app_id = None if session else store.app_of_job(job_id)
    try:
        app_id = app_id or resolve_session(session, config.get(options.YARN_CLIENT_TIMEOUT), store)
        with DispatcherClient(app_id, config.get(options.YARN_CLIENT_TIMEOUT), store) as client:
            details = client.details(job_id)
    except JobNotFound:
        raise
    except (YarnError, KeyError) as err:
        archived = archived_job(store.info(app_id).get("history_dir", ""), job_id) \
            if app_id else None
        if archived is None:
            fail(err)
        details = archived
        console.print(f"(session {app_id} is gone; from its history)", highlight=False)
    console.print(f"job {details.job_id} ({details.name}) in session {app_id}: "
                  f"{details.status.value}", highlight=False)
    console.print(progress_table(details))
    print_summary(details, console, subtasks)
    if details.failure_detail:
        console.print(details.failure_detail, markup=False, highlight=False)


@user_errors
def cancel_session_job(job_id: JobID, session: str, config: Configuration) -> None:
    from yarnflow.client.targets.app_store import ApplicationStore
    from yarnflow.client.targets.dispatcher_client import DispatcherClient
    store = ApplicationStore()
    app_id = session_of(job_id, session, config, store)
    with DispatcherClient(app_id, config.get(options.YARN_CLIENT_TIMEOUT), store) as client:
        client.cancel(job_id)
        details = client.details(job_id)
    Console().print(f"cancelling job {job_id} in session {app_id} ({details.status.value})",
                    highlight=False)


def session_savepoint(job_id: JobID, directory: str, terminate: bool, session: str,
                      config: Configuration, timeout: float) -> str:
    from yarnflow.client.targets.app_store import ApplicationStore
    from yarnflow.client.targets.dispatcher_client import DispatcherClient
    store = ApplicationStore()
    app_id = session_of(job_id, session, config, store)
    with DispatcherClient(app_id, config.get(options.YARN_CLIENT_TIMEOUT), store) as client:
        return client.savepoint(job_id, directory, terminate, timeout)


@click.command("history")
@click.argument("job_id", required=False)
@session_option
@click.option("--dir", "location", default=None,
              help="The history directory (default: the session's, else session.history-dir).")
@click.option("--subtasks", is_flag=True, help="Also list every subtask's figures.")
@config_options
@user_errors
def history(job_id: JobID | None, session: str, location: str | None, subtasks: bool,
            dynamic: tuple[str, ...], conf_file: str | None) -> None:
    """Ended jobs from the history archive: a session's (while it runs and after it
    stopped) and per-job applications' (which archive there too); all of them, or one
    job's summary, metrics and failure."""
    from yarnflow.client.targets.app_store import ApplicationStore
    from yarnflow.client.targets.history import history_location, open_history
    console = Console()
    config = load_config(conf_file, dynamic)
    store = ApplicationStore()
    if location is None and session:
        named = [a for a, info in store.sessions() if session in (a, info.get("name"))]
        location = store.info(named[0]).get("history_dir") if named else None
        if location is None:
            fail(f"no session {session} was started from this account; name the directory "
                 "with --dir")
    try:
        archive = open_history(location or history_location(config))
        if job_id is None:
            console.print(jobs_table(archive.all(), f"job history in {archive.directory}"))
            return
        details = archive.load(job_id)
    except OSError as err:
        fail(err)
    console.print(f"job {details.job_id} ({details.name}): {details.status.value}",
                  highlight=False)
    print_summary(details, console, subtasks)
    if details.failure_detail:
        console.print(details.failure_detail, markup=False, highlight=False)


__all__ = ["cancel_session_job", "history", "list_jobs", "session", "session_option",
           "show_session_job"]
