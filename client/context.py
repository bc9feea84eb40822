"""How ``Pipeline.execute()`` finds where to run: the CLI sets an execution context
(target, configuration, display) before it runs the user's script, as ``flink run``
does; a script run with plain ``python`` gets the defaults (``local``)."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from yarnflow.conf import Configuration, options


class JobFailedError(RuntimeError):
    """The job ended FAILED or CANCELED; ``result`` holds its summary."""

    def __init__(self, result: Any) -> None:
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


_CONTEXT: ExecutionContext | None = None


def set_context(context: ExecutionContext | None) -> None:
    global _CONTEXT
    _CONTEXT = context


def current_context() -> ExecutionContext | None:
    return _CONTEXT


def execute_pipeline(pipeline: Any, target: str | None, config: Configuration | None) -> Any:
    context = _CONTEXT or ExecutionContext(config or Configuration.load(),
                                           show_progress=sys.stdout.isatty())
    config = config or context.config
    target = target or (context.target if _CONTEXT else config.get(options.TARGET))
    if target.startswith("yarn"):
        from yarnflow.targets.yarn import prepare_config
        config = prepare_config(config)     # YARN's largest container bounds the profiles
    graph = pipeline.job_graph(config)
    if target != "explain":
        graph.check_outputs()
    if target == "explain":
        from yarnflow.explain import ExplainResult, plan_renderable
        context.console.print(plan_renderable(graph, config))
        result: Any = ExplainResult(graph)
        context.results.append(result)
        return result
    if target == "local":
        from yarnflow.targets.run_local import run_local
        result = run_local(graph, config, context)
    elif target == "yarn-per-job":
        from yarnflow.targets.run_yarn import run_yarn_per_job
        result = run_yarn_per_job(graph, config, context)
    elif target == "yarn-session":
        from yarnflow.targets.run_session import run_yarn_session
        result = run_yarn_session(graph, config, context)
    else:
        raise ValueError(f"unknown target {target!r}: use local, yarn-per-job or yarn-session")
    context.results.append(result)
    if result.status.value not in ("FINISHED", "SUBMITTED"):
        raise JobFailedError(result)
    return result
