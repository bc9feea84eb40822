"""The ApplicationMaster of a yarn-session (``python -m yarnflow.appmaster --session``):
FLIP-6's session cluster on YARN.

It hosts the shared ResourceManager (containers from the session's ladder of sizes,
one Skein service each), a Dispatcher that starts a JobMaster per submitted job, and
the Dispatcher's gRPC service next to the ResourceManager's, its address in Skein's
key-value store. It runs until `yarnflow session stop` (the Dispatcher's Shutdown) or
YARN's SIGTERM: then running jobs are cancelled, every job is in the history
directory, and the application ends SUCCEEDED (KILLED when YARN killed it).
"""
from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

from yarnflow.appmaster.dispatcher import Dispatcher
from yarnflow.core.history import open_archive
from yarnflow.rpc.codec import JOB_DETAILS
from yarnflow.appmaster.dispatcher.job_graph_store import JobGraphStore, job_graph_store_location
from yarnflow.appmaster.dispatcher.service import add_dispatcher_service
from yarnflow.core.container_ladder import ContainerLadder, parse_container_sizes
from yarnflow.appmaster.webmonitor import WebMonitorServer
from yarnflow.appmaster.resourcemanager.delegation_tokens import (KeytabTokenProvider,
                                                                  obtain_before_start)
from yarnflow.appmaster.settings import YarnApplicationSettings
from yarnflow.appmaster.yarn_application import (keytab_token_provider, serve_web_monitor,
                                                 start_components)
from yarnflow.core.fs.tokens import CREDENTIALS
from yarnflow.conf import Configuration
from yarnflow.core.contract import CONF_ENV, decode_env

log = logging.getLogger("yarnflow.appmaster.session")


class Session:
    def __init__(self, config: Configuration, settings: YarnApplicationSettings, app: Any,
                 token_provider: KeytabTokenProvider | None = None) -> None:
        self.settings = settings
        self.ladder = ContainerLadder(parse_container_sizes(settings.session_container_sizes),
                                      settings.worker_overhead_mb)
        self.history_dir = settings.history_dir
        self._stopped = threading.Event()
        self.reason = ""
        self.dispatcher: Dispatcher | None = None
        self.job_graphs: JobGraphStore | None = None
        self.components: Any = None
        components = start_components(
            config, settings, app, self.ladder, settings.session_min_executors,
            register_more=self._register_dispatcher, token_provider=token_provider)
        self.web: WebMonitorServer = serve_web_monitor(config, settings, components, self._dispatcher(),
                                                       app, "yarn-session")

    def _dispatcher(self) -> Dispatcher:
        """The Dispatcher ``_register_dispatcher`` made while the components started."""
        assert self.dispatcher is not None
        return self.dispatcher

    def _register_dispatcher(self, components: Any, server: Any) -> None:
        # Runs while the components start, before their address is published: no
        # client can reach the server before the Dispatcher is on it.
        self.components = components
        self.job_graphs = JobGraphStore(job_graph_store_location(
            self.history_dir, os.environ.get("SKEIN_APPLICATION_ID", "session"))) \
            if self.history_dir else None
        self.dispatcher = Dispatcher(components, self.ladder,
                                     open_archive(self.history_dir, JOB_DETAILS) if self.history_dir else None,
                                     self.job_graphs)
        self.dispatcher.expect_recovery()
        add_dispatcher_service(server, self.dispatcher, self.stop)

    def recover(self) -> None:
        """Attempt 2 or later: the jobs the dead attempt accepted and did not finish run
        again, under their ids (the store is empty in attempt 1)."""
        recovered = self._dispatcher().recover()
        if recovered:
            log.info("ApplicationMaster attempt %d runs again %d job(s) an earlier attempt "
                     "had accepted: %s", self.components.application_attempt, len(recovered),
                     ", ".join(recovered))

    def stop(self, reason: str) -> None:
        if not self._stopped.is_set():
            self.reason = reason
            self._stopped.set()

    def _replaced(self) -> bool:
        """A replaced attempt (``attempt_fence.py``) leaves the job graph store to the
        attempt that replaced it, which recovers the session's jobs from it; one that
        cannot tell leaves it too (a later attempt finds the ended jobs archived)."""
        try:
            self.components.fence.check("removing the session's job graph store")
        except Exception as err:   # noqa: BLE001 - replaced, or the file system cannot say
            log.warning("%s", err)
            return True
        return False

    def serve(self) -> tuple[str, str]:
        self._stopped.wait()
        log.info("stopping the session: %s", self.reason)
        dispatcher = self._dispatcher()
        dispatcher.close(self.settings.job_cancel_timeout)
        running, finished = dispatcher.counts()
        self.web.stop()
        self.components.stop()
        dispatcher.stop()
        if self.job_graphs is not None and not self._replaced():
            self.job_graphs.discard()   # every job ended and is archived: nothing to run again
        status = "KILLED" if self.reason.startswith("SIGTERM") else "SUCCEEDED"
        return status, f"yarnflow session stopped ({self.reason}); {finished} jobs ran"


def run_session(app: Any) -> tuple[str, str]:
    config = Configuration.from_json(decode_env(CONF_ENV).decode())
    settings = YarnApplicationSettings.of(config)
    provider = keytab_token_provider(settings)
    obtain_before_start(provider, CREDENTIALS)   # before the history directory is read
    session = Session(config, settings, app, provider)
    session.recover()
    signal.signal(signal.SIGTERM, lambda *_: session.stop("SIGTERM from YARN"))
    return session.serve()
