"""Cancelling one deployed attempt on its executor (Flink's Execution.cancel): the
executor is asked, and the attempt counts as cancelled when it says it stopped, when
it cannot be reached or does not know the attempt, or at the latest after
``task.cancellation.timeout``. Runs on the JobMaster's main thread."""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Callable

from yarnflow.appmaster.jobmaster.executiongraph import Execution, ExecutionState
from yarnflow.rpc.endpoint import MainThreadExecutor

log = logging.getLogger(__name__)


class ExecutionCanceller:
    def __init__(self, main: MainThreadExecutor, timeout: float,
                 canceled: Callable[[Execution], None]) -> None:
        """``timeout``: task.cancellation.timeout; ``canceled(execution)``: a CANCELING
        attempt is to count as CANCELED."""
        self._main = main
        self._timeout = timeout
        self._canceled = canceled

    def send(self, execution: Execution, timed: bool = False) -> None:
        """Ask its executor to cancel a CANCELING attempt; ``timed``: it counts as
        cancelled after task.cancellation.timeout even if the executor never says."""
        if timed:
            self._main.schedule(self._timeout, self._force, execution)
        slot = execution.slot
        if slot is None or slot.gateway is None:
            return

        def answered(known: "Future[bool]") -> None:
            # the executor is unreachable, or it has no such attempt (it never arrived,
            # or ended long ago): it counts as cancelled now, not after a timeout
            if execution.state is ExecutionState.CANCELING and \
                    (known.exception() is not None or not known.result()):
                self._canceled(execution)
        slot.gateway.cancel_task(execution.attempt_id).add_done_callback(
            lambda known: self._main.execute(answered, known))

    def _force(self, execution: Execution) -> None:
        if execution.state is ExecutionState.CANCELING:
            log.warning("%s did not acknowledge cancellation within task.cancellation.timeout",
                        execution)
            self._canceled(execution)
