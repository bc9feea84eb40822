"""How one component refuses another's call, the same way everywhere. A refusal is an
answer (the peer understood the call and said no), not a transport failure; the rpc
edge carries each kind as a gRPC status and turns it back into the same exception on
the caller's side (``yarnflow.rpc.errors``)."""
from __future__ import annotations

class Refused(Exception):
    """The peer refused the call; the message says why and, where it can, what to do."""


class FencingError(Refused):
    """The call carried a fencing token (JobMasterId, ResourceManagerId) that is not
    the current one, so a stale JobMaster or ResourceManager cannot act on a component
    that has moved on."""


class UnknownJob(Refused):
    """No job (or no JobMaster registered for it) by that JobID."""


class UnknownAllocation(Refused):
    """No slot or slot request by that AllocationID."""


class UnknownExecutor(Refused):
    """No registered TaskExecutor by that ResourceID: it must register (again)."""


class NotRegisteredYet(Refused):
    """A TaskExecutor asked to allocate a slot by a ResourceManager whose answer to
    its registration has not reached it yet: the ResourceManager asks again shortly
    (it acts on a registration as soon as it accepts it, before its reply arrives)."""


class JobRejected(Refused):
    """A job the session cannot run; the message names the problem and the fix."""


class MissingSharedParts(Refused):
    """A deployment named shared parts (``core/deployment.py``) the TaskExecutor does not
    hold: their carrier was overtaken or lost, or the executor let them go. The JobMaster
    sends the deployment again with every part it names."""


class EndpointStopped(RuntimeError):
    """A call reached a component whose main thread was shut down: the component is
    gone for its peers (its service answers UNAVAILABLE), not broken. Not a refusal:
    nobody considered the call."""


REFUSALS: dict[str, type[Refused]] = {cls.__name__: cls for cls in (
    Refused, FencingError, UnknownJob, UnknownAllocation, UnknownExecutor, NotRegisteredYet,
    JobRejected, MissingSharedParts)}


class TaskCancelled(Exception):
    """The task was cancelled: raised where its thread notices (waiting on the data
    plane, between two batches of a chain), so it stops at the next batch instead of at
    the end of its input. Not a failure: the task ends CANCELED."""
