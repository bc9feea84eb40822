"""``yarnflow run -t yarn-per-job``: submit, print the application, and return — or,
with ``--attach``, follow the job to its end with the live display."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.live import Live

from yarnflow.conf import Configuration, options
from yarnflow.display import print_summary, progress_table
from yarnflow.core.jobgraph import JobGraph
from yarnflow.targets.yarn import RunStatus, Submission, submit_per_job
from yarnflow.targets.yarn_apps import YarnApplication

_JOB_STATUS = {"SUCCEEDED": RunStatus.FINISHED, "FAILED": RunStatus.FAILED,
               "KILLED": RunStatus.CANCELED}


@dataclass
class AttachedResult:
    """How an attached run ended, in the shape of a local JobResult."""
    job_id: str
    app_id: str
    status: RunStatus
    failure: str
    failure_detail: str
    details: Any


def archived_details(config: Configuration, job_id: str) -> Any:
    """The job's final details as its ApplicationMaster archived them; None when the
    archive cannot be read (the live view's last figures then stand in)."""
    location = config.get(options.SESSION_HISTORY_DIR)
    if not location:
        return None
    from yarnflow.rpc.archive import open_archive
    try:
        return open_archive(location).load(job_id)
    except (KeyError, OSError, ValueError):
        return None


def run_yarn_per_job(graph: JobGraph, config: Configuration, context: Any) -> Submission | AttachedResult:
    submission = submit_per_job(graph, config)
    console = context.console
    console.print(f"submitted job {submission.job_id} as YARN application "
                  f"[bold]{submission.app_id}[/]", highlight=False, soft_wrap=True)
    console.print(f"tracking URL: {submission.tracking_url}", highlight=False, soft_wrap=True)
    if not config.get(options.ATTACHED):
        console.print(f"follow it with: yarnflow status {submission.app_id}", highlight=False, soft_wrap=True)
        return submission
    timeout = config.get(options.YARN_CLIENT_TIMEOUT)
    last: list[Any] = []
    with YarnApplication(submission.app_id, timeout) as app:
        if context.show_progress:
            with Live(console=console, refresh_per_second=4, transient=True) as live:
                def show(details: Any) -> None:
                    last.append(details)
                    live.update(progress_table(details))
                final = app.follow(show)
        else:
            final = app.follow(last.append)
    details = archived_details(config, submission.job_id) or (last[-1] if last else None)
    if details is not None:
        print_summary(details, console, context.show_subtasks)
    status = _JOB_STATUS.get(final.final_status, RunStatus.FAILED)
    console.print(f"application {final.app_id} {final.state} ({final.final_status})", highlight=False, soft_wrap=True)
    failure = "" if status is RunStatus.FINISHED else final.diagnostics
    return AttachedResult(submission.job_id, submission.app_id, status, failure.split("\n")[0],
                          failure, details)
