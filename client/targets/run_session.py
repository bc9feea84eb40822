"""``yarnflow run -t yarn-session``: hand the JobGraph to a running session's
Dispatcher and return once it accepted the job, printing the job id — or, with
``--attach``, follow the job to its end with the live display."""
from __future__ import annotations

import time
from typing import Any, Callable

from rich.live import Live

from yarnflow.conf import Configuration, options
from yarnflow.display import print_summary, progress_table
from yarnflow.core.jobgraph import JobGraph
from yarnflow.rpc.generated import jobmaster_pb2
from yarnflow.targets.app_store import ApplicationStore
from yarnflow.targets.run_yarn import AttachedResult
from yarnflow.targets.session import SessionClient, resolve_session
from yarnflow.targets.yarn import RunStatus, Submission
from yarnflow.rpc.codec import jobgraph_to_proto

ENDED = {"FINISHED": RunStatus.FINISHED, "FAILED": RunStatus.FAILED, "CANCELED": RunStatus.CANCELED}


def submit_to_session(graph: JobGraph, config: Configuration) -> Submission:
    timeout = config.get(options.YARN_CLIENT_TIMEOUT)
    store = ApplicationStore()
    app_id = resolve_session(config.get(options.YARN_APPLICATION_ID), timeout, store)
    with SessionClient(app_id, timeout, store) as session:
        job_id = session.submit(jobgraph_to_proto(graph))
    store.remember_job(job_id, app_id)
    return Submission(app_id, job_id, store.info(app_id).get("tracking_url", ""))


def follow_job(session: SessionClient, job_id: str, on_details: Callable[[Any], None],
               poll: float = 0.5) -> jobmaster_pb2.JobDetails:
    """Poll the Dispatcher until the job ended; a finished job stays queryable there,
    so there is no race with its end."""
    while True:
        details = session.details(job_id)
        on_details(details)
        if details.status in ENDED:
            return details
        time.sleep(poll)


def run_yarn_session(graph: JobGraph, config: Configuration, context: Any) -> Submission | AttachedResult:
    submission = submit_to_session(graph, config)
    console = context.console
    console.print(f"job [bold]{submission.job_id}[/] accepted by session {submission.app_id}",
                  highlight=False, soft_wrap=True)
    if not config.get(options.ATTACHED):
        console.print(f"follow it with: yarnflow status {submission.job_id}", highlight=False,
                      soft_wrap=True)
        return submission
    with SessionClient(submission.app_id, config.get(options.YARN_CLIENT_TIMEOUT)) as session:
        if context.show_progress:
            with Live(console=console, refresh_per_second=4, transient=True) as live:
                details = follow_job(session, submission.job_id,
                                     lambda d: live.update(progress_table(d)))
        else:
            details = follow_job(session, submission.job_id, lambda d: None)
    print_summary(details, console, context.show_subtasks)
    console.print(f"job {details.job_id} {details.status}", highlight=False)
    return AttachedResult(details.job_id, submission.app_id, ENDED[details.status],
                          details.failure, details.failure_detail, details)
