"""Deploying one attempt to the slot it was given (Flink's ExecutionDeployer): build its
descriptor, send it with the shared parts its executor lacks, and say why when that
fails. The scheduler decides what to deploy and what a failure means; this only
delivers. Runs on the JobMaster's main thread.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Protocol

from yarnflow.appmaster.jobmaster.executiongraph import Execution, ExecutionState
from yarnflow.appmaster.jobmaster.scheduler.deployment import (build_descriptor,
                                                               invalidate_descriptors)
from yarnflow.appmaster.jobmaster.scheduler.deployment_parts import DeploymentParts
from yarnflow.appmaster.jobmaster.scheduler.scheduler_ng import (NO_CHECKPOINTS, CheckpointHooks,
                                                                  JobMasterAddress)
from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.errors import MissingSharedParts, Refused
from yarnflow.rpc.endpoint import MainThreadExecutor, describe_rpc_error

log = logging.getLogger(__name__)


class DeploymentFailed(Protocol):
    """How the scheduler hears that an attempt could not be deployed: ``recoverable``
    False when a restart would fail the same way (its descriptor cannot be built);
    ``upstream`` when the executor did not answer, whose loss is likely on its way."""
    def __call__(self, execution: Execution, cause: str, *, upstream: bool = False,
                 recoverable: bool = True) -> None: ...


class ExecutionDeployer:
    def __init__(self, main: MainThreadExecutor, job_master: JobMasterAddress,
                 parts: DeploymentParts, failed: DeploymentFailed, batch_rows: int = 0) -> None:
        self.main = main
        # an unbounded job's key groups and what each attempt restores (its scheduler's)
        self.checkpoints: CheckpointHooks = NO_CHECKPOINTS
        self._batch_rows = batch_rows      # the job's pipeline.batch-rows
        self._job_master = job_master
        self.parts = parts
        self._failed = failed

    def deploy(self, execution: Execution) -> None:
        """Deploy a SCHEDULED attempt that holds its slot."""
        vertex = execution.vertex
        execution.transition(ExecutionState.DEPLOYING)
        if execution.attempt_number > 0:   # consumers must not read an old location
            for result in vertex.job_vertex.produced:
                invalidate_descriptors(result)
        try:
            descriptor = build_descriptor(execution, self._job_master.job_master_id,
                                          self._job_master.address, self._batch_rows,
                                          self.checkpoints.max_parallelism,
                                          self.checkpoints.restore_for(execution))
        except Exception as err:  # noqa: BLE001 - a deployment that cannot be built fails the job, named
            self._failed(execution, f"could not build the deployment of {vertex}: {err}",
                         recoverable=False)
            return
        self._send(execution, descriptor)

    def _send(self, execution: Execution, descriptor: TaskDeploymentDescriptor,
              everything: bool = False) -> None:
        """Send with the shared parts the executor lacks (``everything``: all it names),
        once the big ones among them are offloaded."""
        assert execution.slot is not None
        ready = self.parts.prepare(execution.slot.location.resource_id, descriptor, everything)
        if isinstance(ready, Future):
            ready.add_done_callback(
                lambda f: self.main.execute(self._submit, execution, f.result(), everything))
        else:
            self._submit(execution, ready, everything)

    def _submit(self, execution: Execution, descriptor: TaskDeploymentDescriptor,
                resent: bool) -> None:
        if execution.state is not ExecutionState.DEPLOYING:
            return
        assert execution.slot is not None and execution.slot.gateway is not None
        gateway = execution.slot.gateway
        location = execution.slot.location

        def failed(err: Exception) -> None:
            # An executor that cannot be reached is most likely dying, and its loss (the
            # real cause, with its exit code and log) is on its way: like an upstream
            # failure, this waits the grace period for it. A refusal is the cause itself.
            if execution.state is not ExecutionState.DEPLOYING:
                return
            if isinstance(err, MissingSharedParts) and not resent:
                log.info("%s: %s; sending it again with its shared parts", execution.vertex, err)
                self._send(execution, descriptor, everything=True)
                return
            if not isinstance(err, Refused):
                self.parts.not_delivered(location.resource_id, descriptor.carried)
            self._failed(execution, f"could not deploy {execution.vertex} to TaskExecutor "
                         f"{location.resource_id}: {describe_rpc_error(err)}",
                         upstream=not isinstance(err, Refused))
        gateway.submit_task(descriptor).add_done_callback(
            lambda f: f.exception() is not None and self.main.execute(failed, f.exception()))
