"""Run one job on a fresh local cluster and wait for it, with the live display."""
from __future__ import annotations

from typing import Any

from yarnflow.targets.local import JobResult, LocalCluster
from yarnflow.conf import Configuration
from yarnflow.display import follow, print_summary
from yarnflow.core.jobgraph import JobGraph



def run_local(graph: JobGraph, config: Configuration, context: Any) -> JobResult:
    with LocalCluster(config) as cluster:
        client = cluster.submit(graph)
        if context.show_progress:
            follow(client.details, client.result_future.done, context.console)
        result = client.wait()
    print_summary(result.details, context.console, context.show_subtasks)
    return result
