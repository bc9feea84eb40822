"""Prometheus metrics, read from the source at scrape time (a custom collector): the
job details already carry every figure, so nothing counts twice and a scrape sees
exactly what the page shows. Per vertex of each running job, and per operator (a
chain's each its own): records and bytes in and out, and progress; for the cluster:
slots, containers by size and state, pending slot requests; per job: restarts. An
ended job's series disappear with it, so a session that runs for weeks does not grow
its scrape without end."""
from __future__ import annotations

import logging
from typing import Any, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from yarnflow.appmaster.webmonitor.source import WebMonitorSource
from yarnflow.appmaster.webmonitor.views import containers_by_size
from yarnflow.core.details import JobDetails

log = logging.getLogger(__name__)

_VERTEX_FIGURES = (("records_in", "records_in", "Records the vertex's subtasks read"),
                   ("records_out", "records_out", "Records the vertex's subtasks wrote"),
                   ("bytes_in", "bytes_in", "Bytes the vertex's subtasks read"),
                   ("bytes_out", "bytes_out", "Bytes the vertex's subtasks wrote"))
# a vertex's figures that its operators do not have each
_VERTEX_ONLY = (("spilled_bytes", "spilled_bytes",
                 "Bytes the vertex's operators spilled to local disk past their memory"),)


class WebMonitorCollector(Collector):
    def __init__(self, source: WebMonitorSource) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        jobs = [job for job in self._source.jobs() if not job.status.is_globally_terminal]
        labels = ["job_id", "job_name", "vertex"]
        for figure, attribute, doc in _VERTEX_FIGURES + _VERTEX_ONLY:
            family = GaugeMetricFamily(f"yarnflow_vertex_{figure}",
                                       f"{doc} (current attempts; a restart starts again)",
                                       labels=labels)
            for job in jobs:
                for vertex in job.vertices:
                    family.add_metric([job.job_id, job.name, vertex.name],
                                      sum(getattr(s.metrics, attribute) for s in vertex.subtasks))
            yield family
        progress = GaugeMetricFamily("yarnflow_vertex_progress", "How far the vertex is, 0..1 "
                                     "(a source by splits read, others by input channels)",
                                     labels=labels)
        for job in jobs:
            for vertex in job.vertices:
                progress.add_metric([job.job_id, job.name, vertex.name], vertex.progress())
        yield progress
        yield from self._operators(jobs)
        restarts = GaugeMetricFamily("yarnflow_job_restarts", "Failovers the running job went "
                                     "through", labels=["job_id", "job_name"])
        for job in jobs:
            restarts.add_metric([job.job_id, job.name], job.restarts)
        yield restarts
        yield from self._checkpoints(jobs)
        yield from self._event_time(jobs)
        yield from self._cluster()

    @staticmethod
    def _event_time(jobs: list[JobDetails]) -> Iterator[Metric]:
        """A streaming job's watermark per vertex (its slowest subtask's: Flink's
        currentInputWatermark) and each source's lag (Kafka's records-lag-max, summed)."""
        labels = ["job_id", "job_name", "vertex"]
        watermark = GaugeMetricFamily("yarnflow_vertex_watermark_ms", "The vertex's event "
                                      "time: its subtasks' lowest watermark, in ms since the "
                                      "epoch", labels=labels)
        lag = GaugeMetricFamily("yarnflow_source_records_lag", "Records the source's "
                                "subtasks have not read yet (Kafka: behind the log end)",
                                labels=labels)
        for job in jobs:
            for vertex in job.vertices:
                marks = [s.metrics.watermark for s in vertex.subtasks]
                if marks and all(m is not None for m in marks):
                    watermark.add_metric([job.job_id, job.name, vertex.name],
                                         min(m for m in marks if m is not None))
                lags = [s.metrics.lag for s in vertex.subtasks if s.metrics.lag is not None]
                if lags:
                    lag.add_metric([job.job_id, job.name, vertex.name], sum(lags))
        yield watermark
        yield lag

    @staticmethod
    def _checkpoints(jobs: list[JobDetails]) -> Iterator[Metric]:
        """A streaming job's checkpoints (Flink's lastCheckpointDuration,
        lastCheckpointSize, numberOfFailedCheckpoints, numberOfCompletedCheckpoints)."""
        labels = ["job_id", "job_name"]
        figures = [
            ("last_checkpoint_duration_seconds", "End-to-end duration of the latest completed "
             "checkpoint"),
            ("last_checkpoint_size_bytes", "State size of the latest completed checkpoint"),
            ("checkpoints_failed", "Checkpoints that failed"),
            ("checkpoints_completed", "Checkpoints that completed")]
        for name, doc in figures:
            family = GaugeMetricFamily(f"yarnflow_job_{name}", doc, labels=labels)
            for job in jobs:
                if job.checkpoints:
                    family.add_metric([job.job_id, job.name], _checkpoint_figure(
                        name, job.checkpoints))
            yield family

    @staticmethod
    def _operators(jobs: list[JobDetails]) -> Iterator[Metric]:
        """Per operator, under its vertex (Flink's operator scope): a chain's operators
        each have their own figures; an operator alone has its vertex's."""
        labels = ["job_id", "job_name", "vertex", "operator"]
        families = {figure: GaugeMetricFamily(
            f"yarnflow_operator_{figure}",
            doc.replace("vertex's subtasks", "operator") + " (current attempts)", labels=labels)
            for figure, _, doc in _VERTEX_FIGURES}
        progress = GaugeMetricFamily("yarnflow_operator_progress", "How far the operator is, "
                                     "0..1 (done where it finished)", labels=labels)
        for job in jobs:
            for vertex in job.vertices:
                for op in vertex.operator_totals():
                    names = [job.job_id, job.name, vertex.name, op.name]
                    for figure, attribute, _ in _VERTEX_FIGURES:
                        families[figure].add_metric(names, getattr(op, attribute))
                    progress.add_metric(names, vertex.operator_progress(op.name))
        yield from families.values()
        yield progress

    def _cluster(self) -> Iterator[Metric]:
        cluster = self._source.cluster()
        executors = self._source.executors()
        yield GaugeMetricFamily("yarnflow_slots_total", "Slots of registered TaskExecutors",
                                value=sum(w.num_slots for w in cluster.workers))
        yield GaugeMetricFamily("yarnflow_slots_used", "Slots given to a job",
                                value=sum(w.num_slots - w.free_slots for w in cluster.workers))
        yield GaugeMetricFamily("yarnflow_pending_slot_requests",
                                "Slot requests the ResourceManager could not serve yet",
                                value=cluster.pending_slot_requests)
        containers = GaugeMetricFamily("yarnflow_containers", "TaskExecutor containers by size "
                                       "and state (STARTING or REGISTERED)", labels=["size", "state"])
        for state in ("STARTING", "REGISTERED"):
            for size, count in containers_by_size(
                    [e for e in executors if e.state == state]).items():
                containers.add_metric([size, state], count)
        yield containers


def _checkpoint_figure(name: str, stats: dict[str, Any]) -> float:
    latest = stats["latest"]["completed"] or {}
    if name == "last_checkpoint_duration_seconds":
        return float(latest.get("end_to_end_duration", 0)) / 1000.0
    if name == "last_checkpoint_size_bytes":
        return float(latest.get("state_size", 0))
    return float(stats["counts"]["failed" if name == "checkpoints_failed" else "completed"])


def metrics_registry(source: WebMonitorSource) -> CollectorRegistry:
    """A registry of our own: the process-wide default would also publish whatever
    else the ApplicationMaster's libraries register."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WebMonitorCollector(source))
    return registry
