"""The web monitor's HTTP server: GET only, JSON answers, the page's static files and
Prometheus' text format, nothing else.

It is plain HTTP, unlike every gRPC server here: a browser reaches it through YARN's
ResourceManager proxy and Skein's page proxy, neither of which can present a client
certificate. What keeps it safe is what it is not: it binds to one address of the
ApplicationMaster's host (on YARN the loopback interface, which only Skein's proxy,
in the same container, reaches), it answers no method but GET and HEAD, accepts no
job, runs nothing, and its answers carry no certificate, key, launch environment or
sensitive configuration value.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Callable
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from yarnflow.appmaster.settings import WebMonitorSettings
from yarnflow.core.ids import JobID
from yarnflow.core.clock import SYSTEM_CLOCK
from yarnflow.appmaster.webmonitor import views
from yarnflow.appmaster.webmonitor.metrics import metrics_registry
from yarnflow.appmaster.webmonitor.source import WebMonitorSource
from yarnflow.conf import Configuration
from yarnflow.core.errors import UnknownJob

log = logging.getLogger(__name__)

_STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
           "/index.html": ("index.html", "text/html; charset=utf-8"),
           "/app.js": ("app.js", "text/javascript; charset=utf-8"),
           "/style.css": ("style.css", "text/css; charset=utf-8")}
# The page loads nothing from elsewhere, and nothing may frame it.
_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
            "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                                       "frame-ancestors 'none'; form-action 'none'"}
_ID = r"([0-9A-Za-z_.-]+)"


class NotFound(Exception):
    pass


class WebMonitorServer:
    def __init__(self, source: WebMonitorSource, host: str = "127.0.0.1", port: int = 0,
                 refresh_interval: float = 2.0, clock: Callable[[], float] = SYSTEM_CLOCK.time) -> None:
        self.source = source
        self._refresh_interval = refresh_interval
        self._clock = clock
        self._registry = metrics_registry(source)
        routes: list[tuple[str, Callable[..., Any]]] = [
            (r"/config", self._config),
            (r"/overview", self._overview),
            (r"/jobs", self._jobs),
            (r"/jobs/overview", self._jobs_overview),
            (rf"/jobs/{_ID}", self._job),
            (rf"/jobs/{_ID}/plan", self._plan),
            (rf"/jobs/{_ID}/exceptions", self._exceptions),
            (rf"/jobs/{_ID}/checkpoints", self._checkpoints),
            (rf"/jobs/{_ID}/checkpoints/config", self._checkpoints_config),
            (rf"/jobs/{_ID}/vertices/{_ID}", self._vertex),
            (r"/taskmanagers", self._taskmanagers),
            (r"/jobmanager/config", self._jobmanager_config)]
        self._routes = [(re.compile(pattern + "$"), handler) for pattern, handler in routes]
        self._host = host
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @classmethod
    def serve(cls, source: WebMonitorSource, config: Configuration) -> "WebMonitorServer":
        """Started on ``rest.bind-address``/``rest.bind-port``, as the AM and local runs do."""
        settings = WebMonitorSettings.of(config)
        return cls(source, settings.bind_address, settings.bind_port,
                   settings.refresh_interval).start()

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._httpd.server_port}/"

    def start(self) -> "WebMonitorServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="webmonitor",
                                        daemon=True)
        self._thread.start()
        log.info("web monitor serving at %s", self.url)
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5.0)
        self._httpd.server_close()

    # --- answers ---------------------------------------------------------------------
    def answer(self, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of ``path``."""
        if path in _STATIC:
            name, content_type = _STATIC[path]
            return 200, content_type, resources.files(__package__).joinpath("static", name).read_bytes()
        if path == "/metrics":
            return 200, CONTENT_TYPE_LATEST, generate_latest(self._registry)
        for pattern, handler in self._routes:
            match = pattern.match(path)
            if match:
                try:
                    body = handler(*match.groups())
                except (NotFound, UnknownJob) as err:
                    return 404, "application/json", _json({"errors": [str(err)]})
                return 200, "application/json", _json(body)
        return 404, "application/json", _json({"errors": [f"no such endpoint: {path}"]})

    def _config(self) -> dict[str, Any]:
        app = self.source.application()
        return {"refresh-interval": int(self._refresh_interval * 1000),
                "yarnflow-version": views.VERSION, "mode": app.mode,
                "application-id": app.application_id, "application-attempt": app.attempt,
                "history-dir": app.history_dir}

    def _overview(self) -> dict[str, Any]:
        return views.overview(self.source.application(), self.source.jobs(),
                              self.source.cluster(), self.source.executors(),
                              self.source.blocked_hosts())

    def _jobs(self) -> dict[str, Any]:
        return {"jobs": [{"id": j.job_id, "status": j.status.value} for j in self.source.jobs()]}

    def _jobs_overview(self) -> dict[str, Any]:
        return views.jobs_overview(self.source.jobs(), self._clock())

    def _job(self, job_id: JobID) -> dict[str, Any]:
        return views.job(self.source.job(job_id), self.source.plan(job_id), self._clock())

    def _plan(self, job_id: JobID) -> dict[str, Any]:
        return views.plan(self.source.job(job_id), self.source.plan(job_id))

    def _exceptions(self, job_id: JobID) -> dict[str, Any]:
        return views.exceptions(self.source.job(job_id))

    def _checkpoints(self, job_id: JobID) -> dict[str, Any]:
        """Flink's shape; a batch job has none (Flink answers such a job the same way)."""
        stats = dict(self.source.job(job_id).checkpoints)
        if not stats:
            raise NotFound(f"job {job_id} is not a streaming job: it takes no checkpoints")
        stats.pop("config", None)
        return stats

    def _checkpoints_config(self, job_id: JobID) -> dict[str, Any]:
        stats = self.source.job(job_id).checkpoints
        if not stats:
            raise NotFound(f"job {job_id} is not a streaming job: it takes no checkpoints")
        config: dict[str, Any] = stats.get("config", {})
        return config

    def _vertex(self, job_id: JobID, vertex_id: str) -> dict[str, Any]:
        answer = views.vertex(self.source.job(job_id), vertex_id, self.source.executors(),
                              self._clock())
        if answer is None:
            raise NotFound(f"job {job_id} has no vertex {vertex_id}")
        return answer

    def _taskmanagers(self) -> dict[str, Any]:
        return views.taskmanagers(self.source.executors(), self.source.cluster())

    def _jobmanager_config(self) -> list[dict[str, str]]:
        return views.configuration(self.source.configuration())

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "yarnflow"
            sys_version = ""

            def do_GET(self) -> None:   # http.server's naming
                self._reply(send_body=True)

            def do_HEAD(self) -> None:
                self._reply(send_body=False)

            def _refuse(self) -> None:
                self._send(HTTPStatus.METHOD_NOT_ALLOWED, "application/json",
                           _json({"errors": ["this server only reads: GET and HEAD"]}),
                           True, {"Allow": "GET, HEAD"})

            do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse   # noqa: N815

            def _reply(self, send_body: bool) -> None:
                path = urlsplit(self.path).path.rstrip("/") or "/"
                try:
                    status, content_type, body = server.answer(path)
                except Exception:   # one line to the client, the rest to the log
                    log.exception("web monitor: GET %s failed", path)
                    status, content_type = 500, "application/json"
                    body = _json({"errors": [f"internal error answering {path}; see the "
                                             "ApplicationMaster's log"]})
                self._send(status, content_type, body, send_body)

            def _send(self, status: int, content_type: str, body: bytes, send_body: bool,
                      extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in {**_HEADERS, **(extra or {})}.items():
                    self.send_header(name, value)
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:   # noqa: A002
                log.debug("web monitor %s: " + format, self.address_string(), *args)

        return Handler


def _json(body: Any) -> bytes:
    return json.dumps(body, allow_nan=False).encode()
