"""Messages to a JobMaster that must arrive: a task's state reports and its first-data
notices (FLIP-6: a task's final state must reach its JobMaster, or the job waits
forever for a task that has long ended).

A message is sent at once, and again ``retry_pause`` after every transport failure,
until the JobMaster acknowledges it, refuses it (it no longer knows the attempt), or is
declared lost by this executor's heartbeats. A JobMaster that stalls for less than
``heartbeat.timeout`` therefore gets every report once it runs again. The state
reports not yet acknowledged also ride on the executor's heartbeats, so a JobMaster
repairs a missed report from the next heartbeat too. Main thread only.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable

from yarnflow.core.ids import ExecutionAttemptID, JobMasterId
from yarnflow.appmaster.jobmaster.gateway import JobMasterGateway
from yarnflow.core.errors import Refused
from yarnflow.core.messages import SplitAnswer, TaskExecutionState
from yarnflow.rpc.endpoint import MainThreadExecutor, ScheduledTask, describe_rpc_error

log = logging.getLogger(__name__)

# between a failed send and the next; a stalled JobMaster answers the call in flight as
# soon as it runs again, so this bounds nothing but the load of a dead one
RETRY_PAUSE_S = 1.0


@dataclass(eq=False)
class _Message:
    job_master_id: JobMasterId
    address: str
    send: Callable[[JobMasterGateway], "Future[None]"]
    report: TaskExecutionState | None      # a state report (rides on heartbeats)
    acknowledged: "Future[None]"
    failures: int = 0
    retry: ScheduledTask | None = field(default=None, repr=False)


class JobMasterOutbox:
    def __init__(self, main: MainThreadExecutor,
                 gateway: Callable[[str, JobMasterId], JobMasterGateway],
                 retry_pause: float = RETRY_PAUSE_S) -> None:
        """``gateway(address, job_master_id)`` makes a fenced JobMaster handle."""
        self._main = main
        self._gateway = gateway
        self._retry_pause = retry_pause
        # ("state", attempt id) or ("data", attempt id, result id) -> the message; a
        # newer state report of an attempt replaces the older one
        self._pending: dict[tuple[str, ...], _Message] = {}

    def report_state(self, address: str, job_master_id: JobMasterId, update: TaskExecutionState,
                     acknowledged: "Future[None]") -> None:
        self._add(("state", update.attempt_id), _Message(
            job_master_id, address, lambda jm: jm.update_task_execution_state(update), update,
            acknowledged))

    def notify_data_available(self, address: str, job_master_id: JobMasterId, attempt_id: ExecutionAttemptID,
                              result_id: str, acknowledged: "Future[None]") -> None:
        self._add(("data", attempt_id, result_id), _Message(
            job_master_id, address,
            lambda jm: jm.notify_partition_data_available(attempt_id, result_id), None,
            acknowledged))

    def acknowledge_checkpoint(self, address: str, job_master_id: JobMasterId,
                               attempt_id: ExecutionAttemptID, checkpoint_id: int,
                               snapshot: bytes, acknowledged: "Future[None]") -> None:
        """A lost acknowledgement would expire the checkpoint: it is sent until taken."""
        self._add(("ack", attempt_id, str(checkpoint_id)), _Message(
            job_master_id, address,
            lambda jm: jm.acknowledge_checkpoint(attempt_id, checkpoint_id, snapshot), None,
            acknowledged))

    def decline_checkpoint(self, address: str, job_master_id: JobMasterId,
                           attempt_id: ExecutionAttemptID, checkpoint_id: int, reason: str,
                           acknowledged: "Future[None]") -> None:
        self._add(("decline", attempt_id, str(checkpoint_id)), _Message(
            job_master_id, address,
            lambda jm: jm.decline_checkpoint(attempt_id, checkpoint_id, reason), None,
            acknowledged))

    def _add(self, key: tuple[str, ...], message: _Message) -> None:
        replaced = self._pending.get(key)
        if replaced is not None:
            self._done(key, replaced)
        self._pending[key] = message
        self._send(key, message)

    def _send(self, key: tuple[str, ...], message: _Message) -> None:
        message.retry = None
        sent = message.send(self._gateway(message.address, message.job_master_id))
        sent.add_done_callback(lambda answer: self._main.execute(self._answered, key, message, answer))

    def _answered(self, key: tuple[str, ...], message: _Message, answer: "Future[None]") -> None:
        if self._pending.get(key) is not message:
            return      # acknowledged meanwhile (by a heartbeat), replaced, or forgotten
        err = answer.exception()
        if err is None or isinstance(err, Refused):
            if err is not None:
                log.info("JobMaster refused %s: %s", key[0:2], err)
            self._done(key, message)
            return
        message.failures += 1
        if message.failures == 1:
            log.warning("JobMaster %s did not acknowledge %s of attempt %s (%s): sending it "
                        "again every %g s until it does or is declared lost",
                        message.job_master_id[:8], key[0], key[1][:8], describe_rpc_error(err),
                        self._retry_pause)
        message.retry = self._main.schedule(self._retry_pause, self._send, key, message)

    def _done(self, key: tuple[str, ...], message: _Message) -> None:
        if self._pending.get(key) is message:
            del self._pending[key]
        if message.retry is not None:
            message.retry.cancel()
        if not message.acknowledged.done():
            message.acknowledged.set_result(None)

    # --- for the executor's heartbeats and its view of its JobMasters --------------------
    def unacknowledged_reports(self, job_master_id: JobMasterId) -> list[TaskExecutionState]:
        return [m.report for m in self._pending.values()
                if m.report is not None and m.job_master_id == job_master_id]

    def heartbeat_acknowledged(self, job_master_id: JobMasterId, reports: list[TaskExecutionState]) -> None:
        """The JobMaster took in a heartbeat carrying ``reports``: those still pending
        unchanged need no further send."""
        for report in reports:
            key = ("state", report.attempt_id)
            message = self._pending.get(key)
            if message is not None and message.report is report and \
                    message.job_master_id == job_master_id:
                self._done(key, message)

    def holds(self, attempt_id: ExecutionAttemptID) -> bool:
        """Whether a report of the attempt is still on its way (so the attempt is known
        here even when its task has left its slot)."""
        return ("state", attempt_id) in self._pending

    def job_masters(self) -> dict[JobMasterId, str]:
        """JobMasterId -> address of every JobMaster with a message pending."""
        return {m.job_master_id: m.address for m in self._pending.values()}

    def forget(self, job_master_id: JobMasterId) -> None:
        """The JobMaster is lost: what it never took in is no longer wanted."""
        for key, message in list(self._pending.items()):
            if message.job_master_id == job_master_id:
                self._done(key, message)


class TaskJobMasterGateway:
    """The JobMaster as a task sees it (called from the task's thread): its reports and
    notices go through the executor's outbox, its split requests straight to the
    JobMaster (the task retries those itself, with a request number)."""

    def __init__(self, outbox: JobMasterOutbox, main: MainThreadExecutor, address: str,
                 job_master_id: JobMasterId, direct: JobMasterGateway) -> None:
        self._outbox = outbox
        self._main = main
        self._address = address
        self._jm_id = job_master_id
        self._direct = direct

    def update_task_execution_state(self, update: TaskExecutionState) -> "Future[None]":
        return self._through_outbox(self._outbox.report_state, update)

    def notify_partition_data_available(self, attempt_id: ExecutionAttemptID, result_id: str) -> "Future[None]":
        return self._through_outbox(self._outbox.notify_data_available, attempt_id, result_id)

    def request_next_input_split(self, vertex_id: str, attempt_id: ExecutionAttemptID,
                                 request: int) -> "Future[SplitAnswer]":
        return self._direct.request_next_input_split(vertex_id, attempt_id, request)

    def acknowledge_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                               snapshot: bytes) -> "Future[None]":
        return self._through_outbox(self._outbox.acknowledge_checkpoint, attempt_id,
                                    checkpoint_id, snapshot)

    def decline_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                           reason: str) -> "Future[None]":
        return self._through_outbox(self._outbox.decline_checkpoint, attempt_id,
                                    checkpoint_id, reason)

    def _through_outbox(self, add: Callable[..., None], *args: object) -> "Future[None]":
        acknowledged: Future[None] = Future()

        def not_queued(queued: "Future[None]") -> None:
            err = queued.exception()
            if err is not None and not acknowledged.done():
                acknowledged.set_exception(err)
        self._main.execute(add, self._address, self._jm_id, *args, acknowledged) \
            .add_done_callback(not_queued)
        return acknowledged
