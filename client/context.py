"""How ``Pipeline.execute()`` finds where to run: the CLI sets an execution context
(target, configuration, display) before it runs the user's script, as ``flink run``
does; a script run with plain ``python`` gets the defaults (``local``)."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from yarnflow.conf import Configuration, options
from yarnflow.core.details import JobResult
from yarnflow.core.status import JobStatus


class JobFailedError(RuntimeError):
    """The job ended FAILED or CANCELED; ``result`` holds its summary."""

    def __init__(self, result: JobResult) -> None:
        super().__init__(f"job {result.job_id} {result.status.value}: {result.failure}")
        self.result = result


@dataclass
class ExecutionContext:
    config: Configuration
    target: str = "local"
    show_progress: bool = True
    console: Console = field(default_factory=lambda: Console(stderr=False))
    results: list[Any] = field(default_factory=list)
    show_subtasks: bool = False     # print every subtask's metrics after the summary
    explain_json: bool = False      # ``explain --json``: the plan as JSON, not a table
    explain_passes: bool = False    # ``explain --passes``: the plan after each pass too


_CONTEXT: ExecutionContext | None = None


def set_context(context: ExecutionContext | None) -> None:
    global _CONTEXT
    _CONTEXT = context


def current_context() -> ExecutionContext | None:
    return _CONTEXT


def execute_pipeline(pipeline: Any, target: str | None, config: Configuration | None,
                     collect: bool = False) -> Any:
    """Submit the pipeline to its target; returns the job's ``JobHandle`` once the job
    ended (an attached run, and always on ``local``) or was accepted (a detached one).
    A job that ended other than FINISHED raises ``JobFailedError``. ``collect``: the
    pipeline ends in a collect sink, so the run follows the job to its end and
    fetches its result whatever the target (``handle.collected()``)."""
    context = _CONTEXT or ExecutionContext(config or Configuration.load(),
                                           show_progress=sys.stdout.isatty())
    config = config or context.config
    name = target or (context.target if _CONTEXT else config.get(options.TARGET))
    if name == "explain":
        from yarnflow.client.explain import ExplainResult, plan_json, plan_renderable
        from yarnflow.client.planner.compiler import describe

        def show_pass(name: str, planning: Any) -> None:
            context.console.print("\n".join(describe(name, planning)), markup=False,
                                  highlight=False, soft_wrap=True)
        graph = pipeline.job_graph(config, show_pass if context.explain_passes else None)
        if context.explain_json:
            context.console.print(json.dumps(plan_json(graph, config), indent=2), markup=False,
                                  highlight=False, soft_wrap=True)
        else:
            context.console.print(plan_renderable(graph, config))
        explained = ExplainResult(graph)
        context.results.append(explained)
        return explained
    from yarnflow.client.display import follow, print_summary
    from yarnflow.client.targets import make_target
    chosen = make_target(name, config)     # a YARN target reads what YARN grants here
    graph = pipeline.job_graph(chosen.config)
    graph.check_outputs(chosen.application_ended)
    from yarnflow.client.planner.streaming import check_streaming_submission
    check_streaming_submission(graph, chosen.config)
    handle = chosen.submit(graph)
    handle.collecting = collect
    context.results.append(handle)
    for line in chosen.submitted(handle):
        context.console.print(line, highlight=False, soft_wrap=True)
    if not chosen.attached and not collect:
        handle.close()
        return handle
    try:
        if context.show_progress:
            follow(handle, context.console)
        result = handle.wait()
    finally:
        handle.close()
    print_summary(result.details, context.console, context.show_subtasks)
    if handle.application_id:
        context.console.print(f"job {result.job_id} {result.status.value}", highlight=False)
    if result.status is not JobStatus.FINISHED:
        if handle.log_location:
            context.console.print(f"TaskExecutor logs: {handle.log_location}", highlight=False,
                                  soft_wrap=True)
        raise JobFailedError(result)
    return handle
