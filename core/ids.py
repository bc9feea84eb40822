"""IDs and fencing tokens: random hex strings, typed apart so they are not mixed up."""
from __future__ import annotations

import uuid
from typing import NewType

JobID = NewType("JobID", str)
AllocationID = NewType("AllocationID", str)
ExecutionAttemptID = NewType("ExecutionAttemptID", str)
ResourceID = NewType("ResourceID", str)
JobMasterId = NewType("JobMasterId", str)
ResourceManagerId = NewType("ResourceManagerId", str)


def new_id() -> str:
    return uuid.uuid4().hex


class FencingError(Exception):
    """A call carried a fencing token that is not the current leader's: it is refused so
    a stale JobMaster or ResourceManager cannot act on a component that has moved on."""
