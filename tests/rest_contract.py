"""The REST API's documented fields (docs/pages/operations.md, "The REST API"), checked by the
contract tests on ``local`` (tests/integration/test_web_monitor.py) and on YARN
(tests/yarn/test_web_ui.py)."""
from __future__ import annotations

import urllib.request

ENDPOINTS = {
    "config": {"refresh-interval", "yarnflow-version", "mode", "application-id",
               "application-attempt", "history-dir"},
    "overview": {"taskmanagers", "taskmanagers-starting", "slots-total", "slots-available",
                 "pending-slot-requests", "containers-by-size", "jobs-running", "jobs-finished",
                 "jobs-failed", "jobs-cancelled", "yarnflow-version", "mode", "application-id",
                 "application-attempt", "start-time", "history-dir", "blocked-hosts",
                 "delegation-tokens"},
    "jobs": {"jobs"},
    "jobs/overview": {"jobs"},
    "jobs/{jid}": {"jid", "name", "state", "start-time", "end-time", "duration", "restarts",
                   "application-attempt", "vertices", "failure", "status-counts",
                   "blocked-hosts", "speculations"},
    "jobs/{jid}/plan": {"plan"},
    "jobs/{jid}/vertices/{vid}": {"id", "name", "parallelism", "status", "subtasks"},
    "jobs/{jid}/exceptions": {"root-exception", "exceptionHistory"},
    "taskmanagers": {"taskmanagers", "pending-slot-requests"},
}
VERTEX_FIELDS = {"id", "name", "parallelism", "status", "tasks", "metrics", "subtask-profile",
                 "slot-sharing-group", "inputs", "decision", "operators", "ranges"}
SUBTASK_FIELDS = {"subtask", "status", "attempt", "taskmanager-id", "container-id", "node", "host",
                  "slot-profile", "worker-spec", "metrics", "start-time", "duration",
                  "splits-local", "splits-remote", "failure"}
VERTEX_METRICS = {"read-records", "write-records", "read-bytes", "write-bytes", "input-skew",
                  "progress", "splits-total", "spilled-bytes", "spill-files"}
SUBTASK_METRICS = {"read-records", "write-records", "read-bytes", "write-bytes",
                   "records-in-per-input", "inputs-done", "inputs-total", "key-range",
                   "spilled-bytes", "spill-files"}
SPECULATION_FIELDS = {"subtask", "attempt", "host", "slow-attempt", "slow-host", "started",
                      "reason", "outcome", "note"}
EXECUTOR_FIELDS = {"id", "state", "container-id", "node", "host", "container", "slot-profile",
                   "slotsNumber", "freeSlots", "slots-used", "worker-spec"}


def metric(url: str, name: str, vertex: str, operator: str | None = None) -> float:
    """A vertex's figure (or, given ``operator``, one of its operators') from the page's
    Prometheus endpoint, as a scraper reads it."""
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(url + "metrics", timeout=15) as response:
        text = response.read().decode()
    return sum(s.value for family in text_string_to_metric_families(text)
               for s in family.samples if s.name == name and s.labels.get("vertex") == vertex
               and (operator is None or s.labels.get("operator") == operator))
