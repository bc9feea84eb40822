"""IDs and fencing tokens: random hex strings, typed apart so they are not mixed up.
A call with a stale fencing token is refused with ``yarnflow.core.errors.FencingError``."""
from __future__ import annotations

from typing import NewType

JobID = NewType("JobID", str)
AllocationID = NewType("AllocationID", str)
ExecutionAttemptID = NewType("ExecutionAttemptID", str)
ResourceID = NewType("ResourceID", str)
JobMasterId = NewType("JobMasterId", str)
ResourceManagerId = NewType("ResourceManagerId", str)
