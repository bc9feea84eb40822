"""The ApplicationMaster on YARN, run by Skein's master script:

    python -m yarnflow.appmaster [--job job.pb]     (per-job mode)
    python -m yarnflow.appmaster --session          (session mode: see yarn_session.py)

(what both modes share: yarn_application.py)

The configuration and the container-size plan come in the launch environment, and
so does the serialized JobGraph (user code inside it as cloudpickle bytes) unless it
is too big for it; then it is localized as ``job.pb``.

It hosts the ResourceManager (with the YARN driver) and the job's JobMaster on one
mutual-TLS gRPC server, publishes that server's address in Skein's key-value store
for TaskExecutors and clients, runs the job, and ends the YARN application with the
job's outcome: SUCCEEDED, FAILED with the failure's summary, or KILLED when
cancelled. Skein ends the application when this process exits, so it exits only
after telling Skein the final status.

YARN may run the ApplicationMaster more than once (``yarn.application-attempts``):
when this process dies, Skein (which runs it) fails the attempt and YARN starts the
next, which finds the JobGraph and configuration where the first did and runs the job
again under the same job id; the sinks' setup clears what the dead attempt had staged.
A job that already ended is not run again (``ended_in_an_earlier_attempt``).
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
import traceback
from pathlib import Path
from typing import Any

from yarnflow.appmaster.components import ApplicationMasterComponents
from yarnflow.appmaster.dispatcher import Dispatcher
from yarnflow.appmaster.dispatcher.service import add_dispatcher_service
from yarnflow.appmaster.gc_tuning import tune_garbage_collector
from yarnflow.appmaster.resourcemanager.delegation_tokens import obtain_before_start
from yarnflow.appmaster.yarn_application import (DIAGNOSTICS_LIMIT, FINAL_STATUS,
                                                 application_attempt, configure_logging,
                                                 diagnostics_of, keytab_token_provider,
                                                 serve_web_monitor, start_components)
from yarnflow.appmaster.settings import YarnApplicationSettings
from yarnflow.appmaster.yarn_session import run_session
from yarnflow.conf import Configuration
from yarnflow.core.contract import CONF_ENV, JOB_ENV, JOB_ID_KEY, decode_env
from yarnflow.core.fs.tokens import CREDENTIALS
from yarnflow.core.history import archived_job, open_archive
from yarnflow.core.ids import JobID
from yarnflow.rpc.codec import JOB_DETAILS, jobgraph_as_received

log = logging.getLogger("yarnflow.appmaster")

def ended_in_an_earlier_attempt(history: str, job_id: JobID,
                                attempt: int | None = None) -> tuple[str, str] | None:
    """The final status and diagnostics of a job an earlier attempt already ran to its
    end (Flink's JobResultStore): such a job is never run again.

    Skein unregisters the application only when it SUCCEEDED or on the last attempt;
    a job that failed or was cancelled in an earlier attempt therefore comes here in the
    next, which ends the application with that outcome. So does a job whose
    ApplicationMaster died between archiving the job and unregistering."""
    attempt = application_attempt() if attempt is None else attempt
    if attempt == 1 or not history:
        return None
    details = archived_job(history, job_id, JOB_DETAILS)
    if details is None or not details.status.is_globally_terminal:
        return None
    log.info("job %s ended %s in an earlier attempt: the application ends with that outcome",
             job_id, details.status.value)
    return FINAL_STATUS.get(details.status, "FAILED"), diagnostics_of(details)


def run(args: argparse.Namespace, app: Any) -> tuple[str, str]:
    """One job, behind a Dispatcher of its own (Flink's MiniDispatcher): the client
    follows and cancels it as it would a session's job, and the Dispatcher archives it
    where the client's summary, ``status`` and ``history`` read it after we are gone."""
    config = Configuration.from_json(decode_env(CONF_ENV).decode())
    settings = YarnApplicationSettings.of(config)
    job_bytes = Path(args.job).read_bytes() if args.job else decode_env(JOB_ENV)
    graph = jobgraph_as_received(job_bytes)
    provider = keytab_token_provider(settings)
    obtain_before_start(provider, CREDENTIALS)
    history = settings.history_dir
    ended = ended_in_an_earlier_attempt(history, graph.job_id)
    if ended is not None:
        return ended
    dispatchers: list[Dispatcher] = []

    def serve_dispatcher(components: ApplicationMasterComponents, server: Any) -> None:
        dispatcher = Dispatcher(components, None, open_archive(history, JOB_DETAILS) if history else None)
        add_dispatcher_service(server, dispatcher, lambda reason: dispatcher.cancel_all())
        dispatchers.append(dispatcher)
    components = start_components(config, settings, app, register_more=serve_dispatcher,
                                  token_provider=provider)
    dispatcher = dispatchers[0]
    # The job first, then its page: a page served before the submission (and linked
    # from YARN's tracking URL) would show an application without its job.
    job_id = dispatcher.submit(graph)
    app.kv[JOB_ID_KEY] = job_id.encode()
    web = serve_web_monitor(config, settings, components, dispatcher, app, "yarn-per-job")

    def on_sigterm(*_: object) -> None:   # `yarn application -kill`, or YARN stopping us
        log.warning("SIGTERM: cancelling job %s", job_id)
        threading.Thread(target=dispatcher.cancel_all, daemon=True).start()
    signal.signal(signal.SIGTERM, on_sigterm)

    details = dispatcher.wait(job_id, timeout=None)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # Skein stops us after unregistering
    log.info("job %s ended %s%s", job_id, details.status.value,
             f": {details.failure}" if details.failure else "")
    wait = settings.collect_result_timeout
    if not dispatcher.wait_fetched(job_id, wait):
        log.warning("the client did not fetch job %s's collected result within %g s "
                    "(pipeline.collect.result-timeout): it is dropped", job_id, wait)
    dispatcher.close(settings.job_cancel_timeout)    # the archive is written
    web.stop()
    components.stop()
    dispatcher.stop()
    return FINAL_STATUS.get(details.status, "FAILED"), diagnostics_of(details)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="yarnflow-appmaster")
    parser.add_argument("--job", help="the serialized JobGraph, when it was too big for "
                        f"${JOB_ENV}")
    parser.add_argument("--session", action="store_true",
                        help="run a session (a Dispatcher taking jobs) instead of one job")
    args = parser.parse_args(argv)
    log_file = configure_logging()
    attempt = application_attempt()
    print(f"yarnflow ApplicationMaster, attempt {attempt}; log: {log_file}", flush=True)
    import skein
    app = skein.ApplicationClient.from_current()
    tune_garbage_collector()
    try:
        if args.session:
            status, diagnostics = run_session(app)
        else:
            status, diagnostics = run(args, app)
    except BaseException:   # whatever happened, YARN must hear it
        status, diagnostics = "FAILED", ("yarnflow ApplicationMaster failed:\n"
                                         + traceback.format_exc()[-DIAGNOSTICS_LIMIT:])
        log.exception("ApplicationMaster failed")
    log.info("ending the application %s", status)
    logging.shutdown()
    app.shutdown(status, diagnostics)
    # Skein stops this process once it has unregistered; do not linger in
    # interpreter finalization meanwhile.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
